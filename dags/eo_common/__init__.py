"""What the DAGs share. Listed in .airflowignore: only imported, never parsed as DAGs."""

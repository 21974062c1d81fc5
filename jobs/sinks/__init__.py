"""External sinks the streaming job delivers to (PostgreSQL)."""

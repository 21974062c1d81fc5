"""The evidence: stream output compared with the batch recomputation, and domain checks."""

"""End-to-end runs: the demo (and the fault lab)."""

"""Batch entry points: rebuild from bronze, verify stream against batch."""

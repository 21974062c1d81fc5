"""Streaming entry points: `python -m streaming` or spark-submit streaming/run.py."""

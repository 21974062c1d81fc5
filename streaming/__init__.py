"""The streaming job: `python -m streaming`, or spark-submit jobs/stream.py (streaming/run.py `cli`)."""

"""The explanation of one row (batch/explain.py), as a submitted script; at a terminal, `python -m batch.explain`:

    spark-submit ... jobs/explain.py TABLE --key COLUMN=VALUE [--key ...] [--version N | --as-of TS] [--json]

Only this call: spark-submit puts the script's folder first on sys.path (docs/layout.md, jobs).
"""

import sys

from batch.explain import cli

if __name__ == "__main__":
    sys.exit(cli())

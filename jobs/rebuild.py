"""The rebuild of derived tables from bronze (batch/rebuild.py), as spark-submit and EMR Serverless run it:

    spark-submit ... jobs/rebuild.py [--start TS --end TS | --interval START/END|all] [--target rebuild|main]

Only this call: spark-submit puts the script's folder first on sys.path (docs/layout.md, jobs).
"""

import sys

from batch.rebuild import cli

if __name__ == "__main__":
    sys.exit(cli())

"""The agreement check, stream against rebuild (batch/verify.py), as spark-submit and EMR Serverless run it:

    spark-submit ... jobs/verify.py [--start TS --end TS | --interval START/END[,START/END...]|all]

Only this call: spark-submit puts the script's folder first on sys.path (docs/layout.md, jobs).
"""

import sys

from batch.verify import cli

if __name__ == "__main__":
    sys.exit(cli())

"""The stream's reset from bronze (ops/reset.py), as spark-submit and EMR Serverless run it:

    spark-submit ... jobs/reset.py

Only this call: spark-submit puts the script's folder first on sys.path (docs/layout.md, jobs).
"""

import sys

from ops.reset import cli

if __name__ == "__main__":
    sys.exit(cli())

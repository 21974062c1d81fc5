"""OPTIMIZE and VACUUM of the lake (batch/maintenance.py), as spark-submit and EMR Serverless run it:

    spark-submit ... jobs/maintenance.py --optimize | --vacuum --retention-hours H

Only this call: spark-submit puts the script's folder first on sys.path (docs/layout.md, jobs).
"""

import sys

from batch.maintenance import cli

if __name__ == "__main__":
    sys.exit(cli())

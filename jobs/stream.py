"""The streaming job (streaming/run.py), as spark-submit, EMR Serverless and the stream service run it:

    spark-submit ... jobs/stream.py run [--until-caught-up] [--standby] [--take-over] [...]

Only this call: spark-submit puts the script's folder first on sys.path (docs/layout.md, jobs).
"""

import sys

from streaming.run import cli

if __name__ == "__main__":
    sys.exit(cli())

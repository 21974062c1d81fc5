"""The small job whose loaded classes the JVM archives (eo/runtime/class_archive.py `build` submits it):

    spark-submit ... jobs/class_archive.py --workload SCRATCH_DIR

Only this call: spark-submit puts the script's folder first on sys.path (docs/layout.md, jobs).
"""

import sys

from eo.runtime.class_archive import cli

if __name__ == "__main__":
    sys.exit(cli())

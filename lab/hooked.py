"""Run one of the platform's entry scripts with the fault lab's hooks installed (lab/faults.py):

    spark-submit ... lab/hooked.py jobs/stream.py run --trigger-seconds 2

The script runs as its own `__main__`, exactly as spark-submit would run it; only the hooks differ.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from eo.runtime.config import REPO_ROOT
from eo.runtime.hooks import install
from lab.faults import FaultHooks


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: lab/hooked.py <script> [args...]")
    install(FaultHooks.from_env())
    script = str(REPO_ROOT / sys.argv[1])
    sys.argv = [script, *sys.argv[2:]]
    sys.path[0] = str(Path(script).parent)  # as when spark-submit runs the script itself
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()

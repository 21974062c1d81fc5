from jobs.cli import guarded
from streaming.run import main

raise SystemExit(guarded(main))

from streaming.run import cli

raise SystemExit(cli())

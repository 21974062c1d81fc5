"""The one command line of the local services (Kafka, PostgreSQL, local S3, Airflow, the Spark
cluster, the streaming job), so that they all answer alike:

    python -m infra.<service> [--json] [--check] VERB [options] [--json] [--check]

Every service has `start`, `stop` and `status`, and some have verbs of their own (kafka `kill`,
postgres `dsn`, ...). `status` prints a table, or JSON with --json, and with --check exits 3 when
the service is not up (infra/status.py); the flags may stand before or after the verb. An unknown
verb or option is a usage error, exit 2. Each service module's `main` is one call to `main` here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, TypeVar

from infra.status import EPILOG, NOT_READY, Status, answer

S = TypeVar("S")
FIXED = ("start", "stop", "status")


def port_and_home(parser: argparse.ArgumentParser) -> None:
    """The options of a service on one port with its state in one folder."""
    parser.add_argument("--port", type=int, help="default: the service's own (see above)")
    parser.add_argument("--home", type=Path, help="its state folder; default: under data/")


def stop_verb(name: str) -> Callable[[Any, argparse.Namespace], None]:
    """`stop` for a service whose own stop() says whether it was running."""

    def stop(target: Any, args: argparse.Namespace) -> None:
        print(f"{name} stopped" if target.stop() else f"{name} was not running")

    return stop


def main(
    prog: str,
    doc: str,
    service: Callable[[argparse.Namespace], S],
    *,
    start: Callable[[S, argparse.Namespace], int | None],
    stop: Callable[[S, argparse.Namespace], int | None],
    status: Callable[[S, argparse.Namespace], Status],
    verbs: Mapping[str, Callable[[S, argparse.Namespace], int | None]] | None = None,
    options: Callable[[argparse.ArgumentParser], object] | None = None,
    passthrough: Collection[str] = (),
    argv: list[str] | None = None,
) -> int:
    """Run `python -m <prog> VERB` on the service built from the options, and return the exit code.

    The verbs print what they did and may return an exit code (None: 0); `status` returns what
    it found, printed and judged here. `options` adds the service's own options; the verbs in
    `passthrough` get the arguments this parser does not know (and those after `--`) as
    `args.extra`, and any other verb given them is a usage error.
    """
    extra_verbs = dict(verbs or {})
    if clash := set(extra_verbs) & set(FIXED):
        raise ValueError(f"{prog}: {sorted(clash)} are every service's own verbs")
    actions = {"start": start, "stop": stop, "status": status, **extra_verbs}
    parser = argparse.ArgumentParser(
        prog=f"python -m {prog}", description=doc, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("verb", choices=list(actions), help="what to do")
    parser.add_argument("--json", action="store_true", help="status: print JSON instead of a table")
    parser.add_argument("--check", action="store_true", help=f"status: exit {NOT_READY} when the service is not up")
    if options:
        options(parser)
    args, extra = parser.parse_known_args(argv)
    if extra and args.verb not in passthrough:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = [a for a in extra if a != "--"]
    target = service(args)
    if args.verb == "status":
        return answer(status(target, args), args.json, args.check)
    return actions[args.verb](target, args) or 0

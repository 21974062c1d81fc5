"""Publish a generated clickstream, or replay a JSON-lines file, into the Kafka topic.

python -m producer generate [--events N] [--seed S] [--span-hours H] [--duplicate R] ...
python -m producer replay --file events.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

from eo.runtime.cli import EXIT_CODES, guarded
from eo.runtime.config import load_settings
from eo.runtime.kafka_admin import ensure_topic
from producer.generator import ClickstreamGenerator, Message, Rates, covered_days
from producer.publish import publish
from producer.summary import default_ack_log, summary


def replay_messages(path: Path) -> Iterator[Message]:
    """Each line as it is; keyed by its event_id when it has one, so copies share a partition."""
    with open(path, "rb") as fh:
        for line in fh:
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                event_id = json.loads(line).get("event_id")
            except (ValueError, AttributeError):
                event_id = None
            key = event_id if isinstance(event_id, str) else hashlib.sha1(line).hexdigest()[:16]
            yield Message(key.encode(), line, "replay")


def extra_field(text: str) -> tuple[str, str]:
    """NAME=VALUE, a JSON key and its string value."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: want NAME=VALUE, e.g. country=FR")
    return name, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m producer", description=__doc__.split("\n")[0], epilog=EXIT_CODES)
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser(
        "generate",
        help="publish a generated clickstream",
        description=f"Publish a generated clickstream. By default {covered_days(48.0)}.",
    )
    gen.add_argument("--events", type=int, default=1_000_000)
    gen.add_argument("--seed", type=int, default=7)
    gen.add_argument(
        "--span-hours", type=float, default=48.0, help="event-time span of the stream, from 2026-11-20 00:00 UTC"
    )
    for f in fields(Rates):
        gen.add_argument(f"--{f.name.replace('_', '-')}", type=float, default=f.default, help="rate")
    gen.add_argument(
        "--extra-field",
        action="append",
        default=[],
        type=extra_field,
        metavar="NAME=VALUE",
        help="add a string field to every event, as a producer that sends a field the declaration may not have yet "
        "(repeatable; docs/sources.md)",
    )
    rep = commands.add_parser("replay", help="publish a JSON-lines file, one record per line")
    rep.add_argument("--file", type=Path, required=True)
    for cmd in (gen, rep):
        cmd.add_argument("--ack-log", type=Path, help="where to record acknowledged offsets")
    args = parser.parse_args(argv)

    settings = load_settings()
    ensure_topic(settings)
    if args.command == "generate":
        rates = Rates(**{f.name: getattr(args, f.name) for f in fields(Rates)})
        generator = ClickstreamGenerator(
            args.seed, rates, span_hours=args.span_hours, total_events=args.events, extra_fields=dict(args.extra_field)
        )
        print(f"[producer] {covered_days(args.span_hours)}", flush=True)
        messages, total, label = generator.messages(), args.events, f"seed{args.seed}"
    else:
        if not args.file.is_file():
            print(f"no such file: {args.file}", file=sys.stderr)
            return 2
        messages, total, label = replay_messages(args.file), None, args.file.stem
    ack_log = args.ack_log or default_ack_log(settings, label)
    stats = publish(messages, settings, ack_log, total=total)
    print(summary(stats))
    print(f"[producer] ack log: {stats.ack_log}")
    return 0 if stats.acked == stats.sent else 1


if __name__ == "__main__":
    sys.exit(guarded(main))

"""Publish a generated stream of the served source, or replay a JSON-lines file, into its Kafka topic.

python -m producer generate [--events N] [--seed S] [--span-hours H] [--duplicate R] ...
python -m producer replay --file events.jsonl

The source is EO_SOURCE's (eo/core/sources: `clicks` by default): `clicks` generates the clickstream
(producer/generator.py), `orders` the shop orders (producer/orders.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

from eo.core.sources import DECLARED, SELECTED, SOURCE_VARIABLE
from eo.runtime.cli import EXIT_CODES, guarded
from eo.runtime.config import Settings, load_settings
from eo.runtime.kafka_admin import ensure_topic
from producer.generator import Message, Rates
from producer.publish import publish
from producer.sources import GENERATORS, NoGenerator, generator_for
from producer.summary import default_ack_log, summary


def other_source_topic(settings: Settings, source: str = SELECTED.name) -> str | None:
    """The other declared source whose topic `settings.topic` is (EO_TOPIC naming it, say): one
    source's records published into another's topic would be read, or quarantined, as its."""
    others = [s.name for s in DECLARED.values() if s.name != source and s.topic == settings.topic]
    return others[0] if others and DECLARED[source].topic != settings.topic else None


def replay_messages(path: Path, event_id_field: str = SELECTED.event_id) -> Iterator[Message]:
    """Each line as it is; keyed by its event id (the served source's `x-event-id` field) when it
    has one, so copies share a partition."""
    with open(path, "rb") as fh:
        for line in fh:
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                event_id = json.loads(line).get(event_id_field)
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
    made = GENERATORS.get(SELECTED.name)
    days = f" By default {made.covered_days(48.0)}." if made else ""
    gen = commands.add_parser(
        "generate",
        help=f"publish a generated stream of {SELECTED.name} ({SOURCE_VARIABLE})",
        description=f"Publish a generated stream of {SELECTED.name} (topic {SELECTED.topic}).{days}",
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
        "(repeatable; docs/sources.md). A source whose declaration has additionalProperties false (orders) "
        "quarantines every record that carries it, as unknown_field:NAME",
    )
    rep = commands.add_parser("replay", help="publish a JSON-lines file, one record per line")
    rep.add_argument("--file", type=Path, required=True)
    for cmd in (gen, rep):
        cmd.add_argument("--ack-log", type=Path, help="where to record acknowledged offsets")
    args = parser.parse_args(argv)

    settings = load_settings()
    try:
        made = generator_for(SELECTED.name) if args.command == "generate" else None
    except NoGenerator as refused:
        print(refused, file=sys.stderr)
        return 2
    other = other_source_topic(settings)
    if other is not None:
        print(
            f"{SOURCE_VARIABLE}={SELECTED.name}, but topic {settings.topic} is the topic of source {other}: publish "
            f"{SELECTED.name} into its own topic ({SELECTED.topic}; EO_TOPIC names another)",
            file=sys.stderr,
        )
        return 2
    ensure_topic(settings)
    if made is not None:
        rates = Rates(**{f.name: getattr(args, f.name) for f in fields(Rates)})
        source_generator = made.make(
            args.seed, rates, span_hours=args.span_hours, total_events=args.events, extra_fields=dict(args.extra_field)
        )
        print(f"[producer] {made.covered_days(args.span_hours)}", flush=True)
        if args.extra_field and not SELECTED.keeps_unknown:
            names = ", ".join(name for name, _ in args.extra_field)
            print(
                f"[producer] {SELECTED.name} declares additionalProperties false: every record carrying "
                f"{names} is quarantined (unknown_field) until its declaration has it",
                flush=True,
            )
        messages, total, label = source_generator.messages(), args.events, f"seed{args.seed}"
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

"""The stream and records lost at the source (eo/core/source_gaps.py): never read past in silence.

Before the query starts, where its next read begins is compared with what the broker still
holds. A gap no one accepted stops the job in one line naming topic, partition, the offsets and
the count, and the command that accepts exactly those (`accept_command`; the ranges are also
recorded in the lake, `refuse`). Gaps a person accepted are read past, and Spark's own
data-loss check (`failOnDataLoss`) stays on for every offset not accepted (`past_accepted`): a
new checkpoint starts right after them (`starting_past`); a checkpoint whose next read lies
before them reads with the check off only until its committed offsets are past them
(streaming/query.py `cross_accepted_gaps`), then the query starts again with it on. Each batch
of such a run also checks, once its tasks have read it and before anything commits, that
whatever its range lost is accepted (`BatchGuard`: offsets Kafka deleted while the stream ran
are caught there). Spark's failure on missing offsets is named from the same check (`named`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from eo.core.source_gaps import Gap, described, merged, ranges_text, uncovered
from eo.runtime import source_gaps
from eo.runtime.cli import NotReady
from eo.runtime.config import STREAM_QUERY, Settings
from streaming import checkpoint

ACCEPT = "python -m ops.source_gaps accept --by <your name> --reason <why>"


def accept_command(gaps: list[Gap]) -> str:
    """The command that accepts exactly these gaps, no more (`--ranges`: what the line shows)."""
    return f"{ACCEPT} --ranges {ranges_text(gaps)}"


class SourceLoss(RuntimeError):
    """A batch's range lost records no one accepted: nothing of it is committed."""


def refusal(missing: list[Gap]) -> str:
    return (
        f"records lost at the source before the stream read them, {described(missing)}. Kafka no longer "
        f"holds them and the stream will not read past them on its own: if the loss is accepted, record it "
        f"with `{accept_command(missing)}` (verify then reports it), or restore the records into the topic; "
        "then start again"
    )


def refuse(settings: Settings, missing: list[Gap]) -> str:
    """The refusal's line, its gaps recorded first in the lake (`source_gaps.write_refused`): what
    `accept` without ranges records, exactly what the line showed."""
    try:
        source_gaps.write_refused(settings, missing)
    except Exception as exc:  # noqa: BLE001 (the line still names the ranges: accept takes them as given)
        print(f"[streaming] the refusal's ranges could not be recorded ({exc}); accept them as the line names them")
    return refusal(missing)


def _next_of(starting_offsets: str | None, topic: str) -> dict[int, int] | None:
    """A new checkpoint's starting offsets (JSON) as positions; Kafka's -2 (earliest) as none."""
    if starting_offsets is None:
        return None
    given = json.loads(starting_offsets).get(topic, {})
    return {int(p): int(o) for p, o in given.items() if int(o) >= 0}


def before_start(settings: Settings, starting_offsets: str | None) -> bool:
    """NotReady naming the gaps no one accepted before the next read; else whether accepted gaps
    lie ahead (the run must read past them). `starting_offsets`: a new checkpoint's."""
    given = _next_of(starting_offsets, settings.topic)
    gaps = source_gaps.found_before(settings, given)
    accepted = source_gaps.accepted(settings)
    missing = uncovered(gaps, accepted)
    if missing:
        raise NotReady(refuse(settings, missing))
    if gaps:
        print(f"[streaming] reading past records lost at the source, as accepted: {described(gaps)}", flush=True)
    return bool(gaps)


def past_accepted(settings: Settings, starting_offsets: str | None) -> dict[int, int]:
    """For a start whose accepted gaps lie ahead (`before_start` was True): per partition, the
    offset right after them, where the read goes on. `starting_offsets`: a new checkpoint's."""
    gaps = source_gaps.found_before(settings, _next_of(starting_offsets, settings.topic))
    return {gap.partition: gap.end for gap in merged(gaps)}


def starting_past(starting_offsets: str, topic: str, past: dict[int, int]) -> str:
    """A new checkpoint's starting offsets (JSON) moved past the accepted gaps: Spark then starts
    after them with its data-loss check on, so a record lost beyond them still stops the run."""
    given = json.loads(starting_offsets)
    offsets = given.get(topic, {})
    for partition, end in past.items():
        offsets[str(partition)] = max(int(offsets.get(str(partition), -2)), end)
    return json.dumps({**given, topic: offsets})


@dataclass
class BatchGuard:
    """For a run that reads past accepted gaps: a batch whose range lost more stops uncommitted."""

    settings: Settings

    def __call__(self, batch_id: int) -> None:
        start, end = (
            json.loads(o)[self.settings.topic] for o in checkpoint.kafka_range(self.settings, STREAM_QUERY, batch_id)
        )
        earliest = source_gaps.earliest_offsets(self.settings)
        lost = [
            Gap(self.settings.topic, int(p), int(first), min(earliest[int(p)], int(end[p])))
            for p, first in start.items()
            if int(p) in earliest and earliest[int(p)] > int(first) and int(end.get(p, first)) > int(first)
        ]
        missing = uncovered(lost, source_gaps.accepted(self.settings))
        if missing:
            raise SourceLoss(refuse(self.settings, missing))


def named(settings: Settings, error: BaseException) -> str | None:
    """After a failed run: the one line for records lost at the source, if that is what stopped it
    (the batch guard's refusal, or Spark's own failure on missing offsets), else None."""
    if SourceLoss.__name__ in str(error):
        text = str(error)
        return text[text.index("records lost at the source") :].splitlines()[0]
    try:
        gaps = source_gaps.found_before(settings, None)
        missing = uncovered(gaps, source_gaps.accepted(settings))
    except Exception:  # noqa: BLE001 (the broker or the checkpoint cannot say: the failure stands as it is)
        return None
    return refuse(settings, missing) if missing else None

"""Records lost at the source: offsets the stream has not read that Kafka no longer holds.

Kafka deletes a partition's oldest records (retention, `delete-records`); if the stream had not
read them yet, they are gone for good. Where the stream's next read starts (per partition) before
the partition's earliest offset, the offsets between are a gap. The stream never skips one on
its own: a person accepts it (`python -m ops.source_gaps accept`), which records it in the lake,
and verify reports it against the producers' acknowledgements.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Gap:
    """Offsets [start, end) of one partition that the source no longer holds."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def records(self) -> int:
        return self.end - self.start

    def __str__(self) -> str:
        return f"{self.topic} partition {self.partition} offsets [{self.start}, {self.end}) ({self.records:,} records)"


def found(topic: str, next_offsets: Mapping[int, int], earliest: Mapping[int, int]) -> list[Gap]:
    """The gaps between where the next read of each partition starts and its earliest offset (a
    partition the reader has no position for starts at 0, the first offset it ever had)."""
    gaps = []
    for partition, first in sorted(earliest.items()):
        start = next_offsets.get(partition, 0)
        if first > start:
            gaps.append(Gap(topic, partition, start, first))
    return gaps


def uncovered(gaps: Iterable[Gap], accepted: Iterable[Gap]) -> list[Gap]:
    """The parts of `gaps` that no accepted gap covers."""
    accepted = sorted(accepted)
    left = []
    for gap in sorted(gaps):
        start = gap.start
        for taken in accepted:
            if (taken.topic, taken.partition) != (gap.topic, gap.partition) or taken.end <= start:
                continue
            if taken.start >= gap.end:
                break
            if taken.start > start:
                left.append(Gap(gap.topic, gap.partition, start, taken.start))
            start = max(start, taken.end)
        if start < gap.end:
            left.append(Gap(gap.topic, gap.partition, start, gap.end))
    return left


def merged(gaps: Iterable[Gap]) -> list[Gap]:
    """The same offsets as few gaps as possible (touching or overlapping ones joined)."""
    out: list[Gap] = []
    for gap in sorted(gaps):
        last = out[-1] if out else None
        if last and (last.topic, last.partition) == (gap.topic, gap.partition) and gap.start <= last.end:
            out[-1] = Gap(gap.topic, gap.partition, last.start, max(last.end, gap.end))
        else:
            out.append(gap)
    return out


def described(gaps: Iterable[Gap], most: int = 5) -> str:
    """The gaps in one line: the one gap, or `N records in K ranges: gap, gap, ...` with the
    first `most` named."""
    gaps = merged(gaps)
    if len(gaps) == 1:
        return str(gaps[0])
    total = sum(g.records for g in gaps)
    named = ", ".join(str(g) for g in gaps[:most]) + (f", and {len(gaps) - most} more" if len(gaps) > most else "")
    return f"{total:,} records in {len(gaps)} ranges: {named}"


def ranges_text(gaps: Iterable[Gap]) -> str:
    """The gaps as `accept --ranges` takes them: `P:FROM-TO` (offsets [FROM, TO)), comma-separated."""
    return ",".join(f"{g.partition}:{g.start}-{g.end}" for g in merged(gaps))


def parse_ranges(topic: str, text: str) -> list[Gap]:
    """`ranges_text`'s form back into gaps of `topic`; ValueError naming a range it cannot read."""
    gaps = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            partition, _, offsets = part.partition(":")
            start, _, end = offsets.partition("-")
            gap = Gap(topic, int(partition), int(start), int(end))
        except ValueError:
            raise ValueError(f"{part!r} is not a range P:FROM-TO (offsets [FROM, TO) of partition P)") from None
        if gap.start < 0 or gap.end <= gap.start:
            raise ValueError(f"{part!r}: FROM must be 0 or more and below TO")
        gaps.append(gap)
    return merged(gaps)

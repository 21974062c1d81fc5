"""When the running job keeps its Python workers warm (streaming/python_workers.py `QuietWatch`):
once per quiet stretch of 30 s, never while a batch runs or just after one."""

from __future__ import annotations

import pytest

from streaming.python_workers import QuietWatch

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_quiet_query_is_kept_warm_once_per_stretch():
    clock = Clock()
    watch = QuietWatch(30, clock)
    answers = []
    for second in range(0, 95, 5):
        clock.now = second
        answers.append((second, watch.seen(7, running=False)))
    assert [s for s, warm in answers if warm] == [30, 60, 90]


def test_a_running_or_new_batch_starts_the_count_again():
    clock = Clock()
    watch = QuietWatch(30, clock)
    clock.now = 25
    assert not watch.seen(None, running=False)
    clock.now = 29
    assert not watch.seen(None, running=True)  # a batch runs: its workers are in use
    clock.now = 50
    assert not watch.seen(None, running=False)  # 21 s quiet since
    clock.now = 55
    assert not watch.seen(1, running=False)  # a batch came and went in between
    clock.now = 84
    assert not watch.seen(1, running=False)
    clock.now = 85
    assert watch.seen(1, running=False)


def test_a_query_that_never_reported_counts_from_its_start():
    clock = Clock()
    watch = QuietWatch(30, clock)
    clock.now = 30
    assert watch.seen(None, running=False)

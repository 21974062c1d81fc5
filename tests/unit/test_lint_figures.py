"""`make lint`'s check that no comment or docstring quotes a measured time (infra/lint_figures.py):
it flags measurements, not settings, numbers of other kinds or strings in code."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from infra import lint_figures

pytestmark = pytest.mark.unit


def flagged(source: str) -> list[int]:
    return [line for line, _ in lint_figures.hits(Path("x.py"), textwrap.dedent(source))]


@pytest.mark.parametrize(
    "comment",
    [
        "# Indices are written as they are: 0.14 s against 0.30 s for 10M keys.",
        "# Owner 0 took 1.25-1.35 s a warm batch.",
        "# A dictionary read is 2x faster here.",
        "# The guarded job ran 14% faster.",
        "# delta-rs commits in 12 ms where Spark costs a second.",
        "# make bench ran 3,047 s.",
        "# Formatting each event was 1 µs per event.",
        "# A standby builds it while it waits: ~0.5 s less.",
    ],
)
def test_a_measured_time_in_a_comment_is_flagged(comment):
    assert flagged(f"x = 1\n{comment}\ny = 2\n") == [2]


def test_a_measured_time_in_a_docstring_is_flagged_at_its_line():
    source = '''
        def f():
            """Reads the file.

            Read whole, it took 0.67 s of its 1.48 s (lab.bench.owner_merge at 400 keys)."""
    '''
    assert flagged(source) == [5]


def test_a_sentence_over_comment_lines_is_one_sentence():
    source = """
        # An idle query asks for new records every 10 ms by default. Asking every 100 ms costs
        # an idle query ~50 ms on its first batch.
    """
    assert flagged(source) == [2, 3]


@pytest.mark.parametrize(
    "comment",
    [
        "# The stream waits 30 s for its lease to come free.",
        "# A lease of 60 s, renewed every 20 s.",
        "# Snapshots are uploaded every 5 s (not 60).",
        "# The broker listens on port 9092.",
        "# 10,000 records a poll, 8 MB a partition's fetch.",
        "# Amounts are DECIMAL(18,2); a value over 4 KB keeps no min/max.",
        '# One line as each step starts ("[rebuild] 2/4 silver (t+14 s)").',
        "# Sessions close after 30 minutes of inactivity; events come up to 3 hours late.",
        "# Faster on the bench's pipeline phase (docs/hot-path.md).",
        "# A retry took 3 attempts at most, each against a fresh connection.",
    ],
)
def test_settings_and_other_numbers_are_not_flagged(comment):
    assert flagged(f"{comment}\nx = 1\n") == []


def test_strings_in_code_are_not_flagged():
    source = """
        MESSAGE = "took 1.25 s against 0.8 s: 2x faster"
        print(f"batch took {1.2} s, 3x slower")
    """
    assert flagged(source) == []


def test_the_checker_prints_each_hit_and_what_to_do(tmp_path, capsys):
    (tmp_path / "slow.py").write_text("x = 1  # took 1.25 s against 0.8 s\n")
    (tmp_path / "fine.py").write_text("x = 1  # waits 30 s\n")
    assert lint_figures.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("slow.py:1: took 1.25 s against 0.8 s")
    assert "move each figure to docs/" in out[-1] and len(out) == 2


def test_the_repository_is_clean(capsys):
    assert lint_figures.main([]) == 0, capsys.readouterr().out

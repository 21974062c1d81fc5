"""No measured time in a Python file's comments or docstrings (`make lint`).

A figure measured on one machine goes stale in the code that quotes it: the code changes, the
machine changes, and nothing re-measures the comment. Figures belong in docs/, beside the command
that measured them (docs/hot-path.md, docs/bench.md); a comment keeps the reason in words and
points there.

The rule. Only comments (`tokenize`) and docstrings (`ast`: module, class and function) are read,
so a string in code is never flagged. A comment block (consecutive comment lines) or a docstring
is split into sentences, and a sentence is flagged when it holds

- a ratio of speed: a number with `x` or `%` before faster, slower, quicker, longer or shorter
  ("2x faster", "3-4x slower", "14% faster");
- a duration (a number or a range of numbers, then s, ms, µs, us, sec, seconds, min, minutes, h
  or hours: "0.14 s", "1.25-1.35 s", "12ms", "3,047 s") that is a cost per unit of work or a
  difference ("~0.7 s a table", "1 µs per event", "~0.5 s less"); or
- a duration with measurement phrasing in the same sentence: a verb of measuring (took, takes,
  measured, cost, spent, saved, paid, lasted, was), a comparison (against, versus, vs, instead
  of, rather than, faster, slower), or where a figure came from (bench, cProfile, profile, py-spy,
  median, p50/p90/p99, "on 2 cores", machine).

A duration alone is a setting, not a measurement: "waits 30 s", "a lease of 60 s", "every 5 s",
"polls every 100 ms" pass. So do numbers without a time unit ("port 9092", "10,000 records",
"DECIMAL(18,2)", "4 KB"), and an example in double quotes (a log line's format: "t+14 s"). tests/
and lab/ (the bench itself, whose reports print times) are not checked.

Usage: `python -m infra.lint_figures [path ...]` (default: the repository). Prints
`path:line: text` for each hit and exits 1 if there is any.
"""

from __future__ import annotations

import ast
import io
import os
import re
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_SKIPPED = {"tests", "lab", "data", "reports"}
PRUNED = {".venv", ".cache", ".git", "node_modules", "__pycache__"}

NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
RANGE = rf"~?{NUMBER}(?:\s?[-–]\s?{NUMBER})?"
# "s" and "h" need a space before them ("1990s" is no duration); the longer units may follow at once.
UNIT = r"(?:\s(?:s|h)|\s?(?:ms|µs|us|secs?|seconds?|mins?|minutes?|hours?|hrs?))"
DURATION = re.compile(rf"(?<![\w.,]){RANGE}{UNIT}(?![\w])")
RATIO = re.compile(rf"(?<![\w.,]){RANGE}\s?(?:x|×|%)\s+(?:faster|slower|quicker|longer|shorter)\b", re.IGNORECASE)
# A duration that is a cost per unit of work, or a difference: "~0.7 s a table", "1 µs per event", "~0.5 s less".
PER_OR_DIFFERENCE = re.compile(
    rf"(?<![\w.,]){RANGE}{UNIT}\s+(?:less|more|longer|shorter|per\s|an?\s(?:batch|table|task|record|row|event|key"
    r"|file|call|run|query|job|partition)\b)",
    re.IGNORECASE,
)
MEASURING = re.compile(
    r"\b(?:took|takes|taking|measured|measuring|costs?|costing|spent|spends?|saved|saves|lasted|paid|pays|paying|was|were"
    r"|against|versus|vs\.?|instead of|rather than|faster|slower"
    r"|bench|cprofile|profiled?|py-spy|median|p50|p90|p99|machine|on \d+ cores?)\b",
    re.IGNORECASE,
)
# An example in double quotes (a log line's format, the rule's own examples) states no measurement.
QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
ADVICE = (
    "measured times in comments or docstrings: move each figure to docs/ (docs/hot-path.md or "
    "docs/bench.md) beside the command that measured it, and keep the reason in words here"
)


def comment_blocks(source: str) -> Iterator[tuple[int, list[str]]]:
    """(first line, texts) of each block of comments: consecutive lines of comments alone, or one
    comment after code."""
    block: list[str] = []
    start = last = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        row = token.start[0]
        alone = not token.line[: token.start[1]].strip()
        text = token.string.lstrip("#").strip()
        if block and alone and row == last + 1:
            block.append(text)
        else:
            if block:
                yield start, block
            block, start = [text], row
        last = row if alone else -1
    if block:
        yield start, block


def docstrings(source: str) -> Iterator[tuple[int, list[str]]]:
    """(first line, lines) of each module, class and function docstring."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                value = body[0].value.value
                if isinstance(value, str):
                    yield body[0].lineno, value.splitlines()


def measured(lines: list[str]) -> Iterator[int]:
    """The index of each line of `lines` where a sentence with a measured time begins its figure."""
    text = QUOTED.sub(lambda m: " " * len(m.group()), "\n".join(lines))
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    flagged: set[int] = set()
    position = 0
    for sentence in SENTENCE_END.split(text):
        offset = text.index(sentence, position) if sentence else position
        position = offset + len(sentence)
        hits = [*RATIO.finditer(sentence), *PER_OR_DIFFERENCE.finditer(sentence)]
        if MEASURING.search(sentence):
            hits += DURATION.finditer(sentence)
        for hit in hits:
            at = offset + hit.start()
            flagged.add(max(i for i, s in enumerate(starts[:-1]) if s <= at))
    yield from sorted(flagged)


def hits(path: Path, source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each line of `source` that states a measured time in a comment or docstring."""
    for first, lines in [*comment_blocks(source), *docstrings(source)]:
        for index in measured(lines):
            yield first + index, lines[index].strip()


def python_files(paths: list[Path]) -> Iterator[Path]:
    """The .py files under `paths`, without tests/ and lab/ at the repository's top and without
    what is not the project's (virtual environments, caches, data)."""
    for path in paths:
        if path.is_file():
            yield path
            continue
        for folder, names, files in os.walk(path):
            here = Path(folder)
            top = here.resolve() == ROOT
            names[:] = sorted(n for n in names if n not in PRUNED and not (top and n in TOP_SKIPPED))
            yield from (here / f for f in sorted(files) if f.endswith(".py"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a) for a in args] or [ROOT]
    found = 0
    for path in python_files(paths):
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        try:
            found_here = sorted(set(hits(path, path.read_text(encoding="utf-8"))))
        except (SyntaxError, tokenize.TokenError) as error:  # ruff reports it; nothing to read here
            print(f"{shown}: not checked, it does not parse ({error})")
            continue
        for line, text in found_here:
            print(f"{shown}:{line}: {text}")
            found += 1
    if found:
        print(f"{found} {ADVICE}.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

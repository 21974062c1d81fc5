"""The checked-in adversarial corpus: hostile records and the outcome docs/bad-input.md gives each.

`hostile.jsonl` holds one case a line: `name`, `class`, the record as `text` (UTF-8) or `b64`
(exact bytes that are not UTF-8 text), `expect` (a quarantine reason, or `valid`) and an
optional `note`. Cases of class `poison` hold POISON_MARKER: under EO_FAULT_POISON=<marker>
they fail their Spark task (lab/faults.py); without it they are valid events.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).with_name("hostile.jsonl")
POISON_MARKER = "__eo_poison__"
VALID = "valid"


@dataclass(frozen=True)
class Case:
    name: str
    cls: str
    value: bytes
    expect: str


def load_corpus(path: Path = CORPUS) -> list[Case]:
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        value = base64.b64decode(item["b64"], validate=True) if "b64" in item else item["text"].encode("utf-8")
        cases.append(Case(item["name"], item["class"], value, item["expect"]))
    return cases

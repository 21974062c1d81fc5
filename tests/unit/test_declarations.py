"""Gold tables are declarations (eo/core/declaration.py, eo/core/gold/): one that lacks something
the platform needs is refused when it is loaded, in one line naming the table and what is
missing; and no module outside a declaration names a gold table."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import re
import tokenize
from pathlib import Path

import pytest

from eo.core.declaration import Additive, DeclarationRefused, Domain, Explain, GoldTable, Sessions
from eo.core.gold import DECLARED, EVERY, checked, discovered
from eo.core.tables import ALL, GOLD, LIVE

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
GOOD = DECLARED["ad_hour_revenue"]
HOUR = dt.timedelta(hours=1)


def refusal(**changed) -> str:
    fields = {f.name: getattr(GOOD, f.name) for f in dataclasses.fields(GOOD)}
    with pytest.raises(DeclarationRefused) as refused:
        GoldTable(**{**fields, "name": "t", **changed})
    return str(refused.value)


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"key": ()}, "no key"),
        ({"key": ("ad_id", "hour")}, "key column 'hour' is not one of its columns"),
        ({"range_column": ""}, "no range column"),
        ({"range_column": "window_date"}, "range column 'window_date' is not a TIMESTAMP column"),
        ({"partition_by": ("day",)}, "partition column 'day' is not one of its columns"),
        ({"transform": None}, "no transform"),
        ({"merge": None}, "no merge rule"),
        ({"merge": Additive(values=())}, "an Additive rule with no values"),
        ({"merge": Additive(values=("ad_id",))}, "additive value 'ad_id' is not a numeric column"),
        ({"merge": Sessions(gap=dt.timedelta(0))}, "a session gap > 0"),
        ({"domain": None}, "no domain"),
        ({"domain": Domain(minimum={"clicks": 0})}, "domain names 'clicks'"),
        ({"explain": None}, "no recomputation for explain"),
        ({"explain": Explain(equal=("ad_id",))}, "explain needs one of window"),
        ({"explain": Explain(equal=("ad_id",), until="window_start")}, "an additive table's explain needs its window"),
        ({"explain": Explain(equal=("user_id",), window=HOUR)}, "explain's column 'user_id' is not both"),
        ({"name": "Bad Name"}, "a name of lower-case letters"),
        ({"source": "nope"}, "source 'nope' is not declared"),
        ({"source": "orders"}, "explain's column 'ad_id' is not both a key column and a silver column"),  # orders'
    ],
)
def test_a_declaration_lacking_what_the_platform_needs_is_refused_in_one_line(changed, said):
    text = refusal(**changed)
    assert "\n" not in text and said in text, text
    assert text.startswith(f"gold table {changed.get('name', 't')!r} refused: "), text


def test_a_set_the_platform_cannot_carry_together_is_refused():
    counting = DECLARED["campaign_minute_metrics"]
    with pytest.raises(DeclarationRefused, match="distinct users are counted against a Sessions table; none"):
        checked({counting.name: counting})
    twin = dataclasses.replace(counting, name="twin")
    with pytest.raises(DeclarationRefused, match="'twin' refused: campaign_minute_metrics counts distinct users"):
        checked({**DECLARED, "twin": twin})
    with pytest.raises(DeclarationRefused, match="the name of a platform table"):
        checked({"silver": dataclasses.replace(GOOD, name="silver")})


def test_a_module_without_its_declaration_is_refused(tmp_path, monkeypatch):
    package = tmp_path / "declared_here"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "orders.py").write_text("TABLE = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DeclarationRefused, match=r"^gold table 'orders' refused: orders.py declares no TABLE"):
        discovered([str(package)], "declared_here")
    (package / "orders.py").unlink()
    (package / "refunds.py").write_text("from eo.core.gold.ad_hour_revenue import TABLE\n")
    with pytest.raises(DeclarationRefused, match=r"declared in refunds\.py, not ad_hour_revenue\.py"):
        discovered([str(package)], "declared_here")


def test_every_declared_table_is_a_live_table_at_its_own_path(lake):
    assert [t.name for t in GOLD] == list(DECLARED)
    for name, declared in DECLARED.items():
        assert ALL[name] is declared.table and declared.table in LIVE
        assert lake.table_path(name) == f"{lake.lake_root}/gold/{name}"
        assert lake.table_path(name, "rebuild") == f"{lake.lake_root}/_rebuild/gold/{name}"


# The product's modules; a declaration is its file in eo/core/gold/ and its transform's module.
PRODUCT = ("eo", "streaming", "batch", "ops", "producer", "lab", "dags", "plugins", "jobs", "infra")


def _declaring_files() -> set[Path]:
    files = {REPO / "eo" / "core" / "gold" / f"{name}.py" for name in EVERY}
    for declared in EVERY.values():
        for function in (declared.transform, declared.rebuild):
            if function is not None:
                files.add(Path(function.__code__.co_filename).resolve())
    return files


def _code_words(path: Path) -> str:
    """A module's names and string literals, its comments and docstrings left out."""
    words, previous = [], None
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type == tokenize.NAME:
            words.append(token.string)
        elif token.type == tokenize.STRING and previous not in (tokenize.INDENT, tokenize.NEWLINE, None):
            words.append(token.string)
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token.type
    return " ".join(words)


def test_no_module_outside_a_declaration_names_a_gold_table():
    names = re.compile(r"\b(" + "|".join(n for name in EVERY for n in (name, name.upper())) + r")\b")
    declaring = _declaring_files()
    naming = [
        f"{path.relative_to(REPO)}: {sorted(set(names.findall(words)))}"
        for folder in PRODUCT
        for path in sorted((REPO / folder).rglob("*.py"))
        if path.resolve() not in declaring and names.search(words := _code_words(path))
    ]
    assert naming == []

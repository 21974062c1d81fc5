"""The expectation suites, as plain lists: what "correct" means for each checked frame."""

from __future__ import annotations

from collections.abc import Sequence

import great_expectations.expectations as gxe

from eo.core.declaration import GoldTable
from eo.core.quality.diff import BATCH, STREAM
from eo.core.tables import SILVER, SOURCE


def _unique(key: Sequence[str]):
    if len(key) == 1:
        return gxe.ExpectColumnValuesToBeUnique(column=key[0])
    return gxe.ExpectCompoundColumnsToBeUnique(column_list=list(key))


def _not_null(columns: Sequence[str]) -> list:
    return [gxe.ExpectColumnValuesToNotBeNull(column=c) for c in columns]


def agreement(values: Sequence[str], batch_rows: int, scope: str) -> list:
    """On a table_diff frame: the same keys on both sides, the same row count, and each value
    column equal to its batch counterpart, key by key."""
    if batch_rows:
        rows = gxe.ExpectColumnSumToBeBetween(
            column="in_stream",
            min_value=batch_rows,
            max_value=batch_rows,
            description=f"the stream has as many rows as the batch rebuild ({batch_rows:,}) over {scope}",
        )
    else:  # GX's sum of an empty column is null, which no range holds
        rows = gxe.ExpectTableRowCountToEqual(
            value=0, description=f"the stream has no rows over {scope}, as the batch rebuild has none"
        )
    return [
        rows,
        gxe.ExpectColumnValuesToBeInSet(
            column="in_stream", value_set=[1], description="no key is missing from the stream (in_stream = 1)"
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="in_batch", value_set=[1], description="the stream has no key the batch rebuild lacks (in_batch = 1)"
        ),
        *[
            gxe.ExpectColumnPairValuesToBeEqual(
                column_A=f"{STREAM}{c}",
                column_B=f"{BATCH}{c}",
                ignore_row_if="either_value_is_missing",
                # The Data Docs show a differing pair as an unlabelled tuple: say its order.
                description=f"{c}: the stream's value equals the batch rebuild's, key by key "
                f"(a differing pair reads (stream, batch))",
            )
            for c in values
        ],
    ]


def accounted() -> list:
    """On an account_for_acks frame: every acknowledged record ended up somewhere, or in a gap a
    person accepted as lost at the source (which verify reports on its own line)."""
    return [gxe.ExpectColumnValuesToBeInSet(column="status", value_set=["accounted", "lost_at_source"])]


def counts_reconcile() -> list:
    """On the one-row counts frame: accepted = silver + quarantine + duplicates removed."""
    return [gxe.ExpectColumnPairValuesToBeEqual(column_A="accepted", column_B="accounted")]


def silver() -> list:
    """Silver's domain, from its source's declaration (eo/core/sources/): its key unique, every
    required field never null, each field within its allowed values and its least value."""
    fields = SOURCE.fields
    return [
        _unique(list(SILVER.key)),
        *_not_null([f.name for f in fields if f.required]),
        *[gxe.ExpectColumnValuesToBeInSet(column=f.name, value_set=list(f.allowed)) for f in fields if f.allowed],
        *[
            gxe.ExpectColumnValuesToBeBetween(column=f.name, min_value=f.minimum)
            for f in fields
            if f.minimum is not None
        ],
    ]


def declared(table: GoldTable) -> list:
    """A declared gold table's domain (eo/core/declaration.py `Domain`): its key unique and never
    null, then what its declaration says of every row."""
    domain = table.domain
    return [
        _unique(table.key),
        *_not_null([*table.key, *domain.not_null]),
        *[gxe.ExpectColumnValuesToBeInSet(column=c, value_set=list(v)) for c, v in domain.in_set.items()],
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=least) for c, least in domain.minimum.items()],
        *[
            gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A=a, column_B=b, or_equal=True)
            for a, b in domain.at_least
        ],
    ]


def domain_of(name: str) -> list | None:
    """The domain expectations of a table by name: silver's, or a declared gold table's."""
    from eo.core.gold import DECLARED

    if name == SILVER.name:
        return silver()
    return declared(DECLARED[name]) if name in DECLARED else None


def __getattr__(name: str):
    """Each declared gold table's domain suite by the table's name (`expectations.<table>()`), as
    `silver()` is silver's."""
    from eo.core.gold import DECLARED

    if name in DECLARED:
        return lambda: declared(DECLARED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

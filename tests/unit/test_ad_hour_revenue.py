"""ad_hour_revenue, declared in two files (eo/core/gold/ad_hour_revenue.py and its transform): its
sums add up exactly however the events are split into tasks and batches, and the rebuild's rows
(the Additive rule's batch execution, in Spark) equal the transform of all events at once."""

import random

import pyarrow as pa
import pytest

from eo.core.declaration import added_up, recomputed
from eo.core.gold import DECLARED
from eo.core.transforms.rules import rows_of
from tests.unit.test_task_gold import random_events, spread

pytestmark = pytest.mark.unit
TABLE = DECLARED["ad_hour_revenue"]


@pytest.mark.parametrize("seed", range(4))
def test_sums_of_any_split_add_up_to_the_whole(seed):
    rng = random.Random(seed)
    events = random_events(rng, 300)
    parts = [TABLE.transform(part) for part in spread(rng, events, 5)]
    whole = recomputed(TABLE, events).sort_by([(c, "ascending") for c in TABLE.key])
    assert added_up(TABLE, pa.concat_tables(parts)).sort_by([(c, "ascending") for c in TABLE.key]) == whole
    assert whole.num_rows and all(row["purchases"] >= 1 for row in whole.to_pylist())


def test_the_rebuild_gives_the_transforms_rows(spark):
    rng = random.Random(9)
    events = random_events(rng, 400)
    rebuilt = rows_of(TABLE, spark.createDataFrame(events.to_pandas()).repartition(3)).toArrow()
    key = [(c, "ascending") for c in TABLE.key]
    assert rebuilt.cast(recomputed(TABLE, events).schema).sort_by(key) == recomputed(TABLE, events).sort_by(key)

"""The lake and the stream's checkpoint agree, or the start is refused (DESIGN invariant 14).

Both say how far the stream got. The checkpoint: its generation (the app id every commit of it
carries, streaming/checkpoint.py), the batches it planned (`offsets/`) and those it committed
(`commits/`, written once every table has the batch). The lake: each live table's transaction id
for that app id, the batch it reached (eo/runtime/live_tables.py `positions`); a checkpoint's
first start claims every table, so a lake that ever ran a checkpoint names its app id. Read from
files and the tables' logs, before Spark starts:

- a checkpoint with batches, but no bronze: the lake was lost, or EO_LAKE_ROOT points elsewhere;
- a lake that never saw the checkpoint's app id: the checkpoint belongs to another lake;
- a live table missing beside bronze: it would be created empty, without the batches (unless it
  was declared since the lake recorded its tables: eo/runtime/lake_tables.py);
- a table short of the checkpoint's last committed batch: the lake is behind (an older copy);
- bronze past the checkpoint's newest planned batch: the checkpoint is behind (an older copy);
- no checkpoint and no bronze, but a beginning recorded in the lake: the lake was emptied.

Each is one line naming both paths and the command that goes on. Beginning a new lake from the
topic is `python -m streaming run --new-lake`: allowed only where the lake holds no live table, it
keeps the old checkpoint aside and is recorded in the lake (eo/runtime/lake_origin.py). The first
start on an empty lake with no checkpoint and no recorded beginning is an ordinary first start,
recorded the same way. A lake without a checkpoint but with events is `streaming/run.py`
`_seeding`'s refusal (a lost checkpoint: `ops.reset`).
"""

from __future__ import annotations

from eo.core.tables import BRONZE
from eo.runtime import lake_origin, lake_tables
from eo.runtime.cli import NotReady
from eo.runtime.config import STREAM_QUERY, Settings
from eo.runtime.environment import environment
from eo.runtime.lake import table_exists
from eo.runtime.live_tables import STREAM_TABLES, app_id_of, generation
from eo.runtime.monitoring import last_committed_batch, numbered

QUERY = STREAM_QUERY
NEW_LAKE = "python -m streaming run --new-lake"
RESET = "python -m ops.reset"


def _planned(settings: Settings) -> int | None:
    """The newest batch the checkpoint planned (its newest `offsets/` file), or None."""
    found = numbered(environment(settings).lake_files, f"{settings.checkpoint_path(QUERY)}/offsets")
    return found[-1] if found else None


def present_tables(settings: Settings) -> list[str]:
    """The live tables the lake holds now."""
    return [t.name for t in STREAM_TABLES if table_exists(settings, settings.table_path(t.name))]


def check(settings: Settings, new_lake: bool = False) -> str | None:
    """NotReady (one line) unless the lake and the checkpoint agree. Returns how the lake begins
    with this start (`lake_origin.FIRST_START`, `lake_origin.NEW_LAKE`), or None: it goes on."""
    lake, checkpoint = settings.lake_root, settings.checkpoint_path(QUERY)
    present = present_tables(settings)
    if new_lake:
        if present:
            raise NotReady(
                f"--new-lake begins a lake where there is none, but the lake at {lake} holds {', '.join(present)} "
                f"(the checkpoint at {checkpoint} stays as it is): to go on with this lake, start without "
                "--new-lake; to begin anew, move the lake away first"
            )
        return lake_origin.NEW_LAKE
    planned = _planned(settings)
    if planned is None:
        return _without_batches(settings, present)
    committed = last_committed_batch(checkpoint, environment(settings).lake_files)
    batches = f"batches up to {planned}"
    if committed != planned:
        batches += f" ({'none' if committed is None else f'up to {committed}'} committed)"
    if BRONZE.name not in present:
        lost = "has no tables" if not present else f"has no {BRONZE.name} (only {', '.join(present)})"
        raise NotReady(
            f"the lake at {lake} {lost}, but the stream's checkpoint at {checkpoint} holds {batches}: the lake "
            "was lost or EO_LAKE_ROOT points at the wrong place, and starting would skip every record before the "
            f"checkpoint's offsets. Set EO_LAKE_ROOT to the lake, or restore it; to begin a new lake from the "
            f"topic, run `{NEW_LAKE}` (it keeps the checkpoint aside)"
        )
    app_id = app_id_of(generation(settings))
    bronze = environment(settings).table(BRONZE.name)
    bronze.refresh()
    if bronze.reached(app_id) is None:
        raise NotReady(
            f"the stream's checkpoint at {checkpoint} belongs to another lake: the lake at {lake} never saw its "
            f"commits (app id {app_id}, {batches}), and starting would read from that checkpoint's offsets, "
            "skipping whatever lies between. Set EO_CHECKPOINT_ROOT to this lake's own checkpoint; if that is "
            f"lost, set it to an empty folder and run `{RESET}`"
        )
    recorded = lake_tables.joined(settings)
    missing = [t.name for t in STREAM_TABLES if t.name not in present]
    added = lake_tables.new_tables(recorded, missing)  # declared since: created empty by this start
    missing = [name for name in missing if name not in added]
    for name in added:
        print(
            f"[lake] {name} is declared but not in the lake at {lake}: this start creates it empty, and it holds "
            "the batches from now on; to fill the days before, run `python -m batch.rebuild --target main` with "
            "the stream stopped (docs/extending.md)",
            flush=True,
        )
    if missing:
        raise NotReady(
            f"{', '.join(missing)} missing from the lake at {lake}, while the stream's checkpoint at {checkpoint} "
            f"holds {batches}: starting would create {'it' if len(missing) == 1 else 'them'} empty, without those "
            f"batches. Run `python -m batch.rebuild --target main` (it rebuilds them from bronze), then start"
        )
    from eo.runtime.live_tables import positions

    reached = lake_tables.comparable(positions(settings, app_id), recorded)
    if committed is not None:
        behind = {name: at for name, at in reached.items() if at < committed + 1}
        if behind:
            held = ", ".join(
                f"{name} at batch {at - 1}" if at else f"{name} at no batch" for name, at in behind.items()
            )
            raise NotReady(
                f"the lake at {lake} is behind the stream's checkpoint at {checkpoint}: the checkpoint committed "
                f"batch {committed}, but {held} (a lake restored from an older copy?), and starting would skip "
                f"what lies between. Run `{RESET}` (it rebuilds from bronze and reads Kafka right after bronze's "
                "last offset), then start"
            )
    ahead = reached.get(BRONZE.name, 0) - 1
    if ahead > planned:
        raise NotReady(
            f"the stream's checkpoint at {checkpoint} is behind the lake at {lake}: {BRONZE.name} holds batch "
            f"{ahead} of it, the checkpoint's newest is batch {planned} (a checkpoint restored from an older "
            f"copy?), and starting would plan those batches again over other records. Run `{RESET}` (it keeps "
            "the checkpoint aside and rebuilds the engine state from bronze, nothing lost), then start"
        )
    return None


def _without_batches(settings: Settings, present: list[str]) -> str | None:
    """A checkpoint that never planned a batch: a first start where the lake has no bronze and no
    beginning recorded; refused where a beginning is recorded but bronze is gone."""
    if BRONZE.name in present:
        return None  # a new checkpoint on a lake: `_seeding` decides (a reset's seed, or a refusal)
    begun = lake_origin.begun(settings)
    if not begun:
        return lake_origin.FIRST_START
    raise NotReady(
        f"the lake at {settings.lake_root} was {lake_origin.described(begun[-1])}, but its {BRONZE.name} is gone "
        f"and the checkpoint at {settings.checkpoint_path(QUERY)} has no batch: the lake was emptied, or "
        f"EO_LAKE_ROOT points at the wrong place. Restore it or set EO_LAKE_ROOT; to begin it again from the "
        f"topic, run `{NEW_LAKE}`"
    )


def keep_aside(spark, settings: Settings) -> str | None:
    """For `--new-lake`: the old checkpoint moved aside (kept, for a post-mortem or to go back to
    the old lake); returns where, or None when there was none."""
    from eo.runtime import lake

    checkpoint = settings.checkpoint_path(QUERY)
    aside = lake.move_aside(spark, checkpoint, "new-lake")
    if aside is not None:
        print(f"[streaming] --new-lake: the checkpoint at {checkpoint} moved to {aside}", flush=True)
    return aside

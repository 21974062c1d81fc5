"""Great Expectations plumbing: validate Spark frames against suites, keep the results, and
publish them as Data Docs (HTML) next to a machine-readable summary."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame

# COMPLETE lists every unexpected row's key, which the Data Docs show as a table; above this
# many unexpected rows a check keeps SUMMARY (counts and a sample) to stay small.
COMPLETE_UP_TO = 1_000
# A frame known to hold at most this many rows is collected (one Spark job) and validated with
# pandas in this process: GX on Spark runs ~35 Spark jobs a check, seconds in a cold JVM. A check
# that names failing rows stays on Spark: GX's pandas page of a failing pair check did not show
# the differing column (stream_revenue), which the Spark page does.
IN_MEMORY_UP_TO = 200_000


def _describe(config) -> str:
    kwargs = config.kwargs
    target = (
        kwargs.get("column")
        or kwargs.get("column_list")
        or (f"{kwargs.get('column_A')} vs {kwargs.get('column_B')}" if "column_A" in kwargs else "")
    )
    return f"{config.type}({target})"


class Evidence:
    """One GX file context under `root`; `check` validates, `publish` writes the Data Docs.
    Every validation of one Evidence carries `run_name`, which the Data Docs index lists."""

    def __init__(self, root: Path, run_name: str) -> None:
        import great_expectations as gx
        from great_expectations.core.run_identifier import RunIdentifier

        self._gx = gx
        root.mkdir(parents=True, exist_ok=True)
        self.context = gx.get_context(mode="file", project_root_dir=str(root))
        from great_expectations.data_context.types.base import ProgressBarsConfig

        # A tqdm bar per validation is noise in job logs.
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.sources = {
            False: self.context.data_sources.add_or_update_spark(name="lake"),
            True: self.context.data_sources.add_or_update_pandas(name="in_memory"),
        }
        self.results: list[dict] = []
        self.run_id = RunIdentifier(run_name=run_name)

    def _batch_definition(self, name: str, in_memory: bool):
        source = self.sources[in_memory]
        try:
            asset = source.get_asset(name)
        except LookupError:
            asset = source.add_dataframe_asset(name=name)
        try:
            return asset.get_batch_definition("whole")
        except KeyError:
            return asset.add_batch_definition_whole_dataframe("whole")

    def check(
        self,
        name: str,
        frame: DataFrame,
        expectations: list,
        index_columns: Sequence[str] = (),
        unexpected_rows: int | None = None,
        asset: str | None = None,
        notes: Sequence[str] = (),
        rows: int | None = None,
    ) -> bool:
        """Validate `frame`; with `index_columns`, failures name the rows by those columns (every
        row when `unexpected_rows`, known beforehand, is small; else a sample). `asset` names
        the data in the Data Docs, `notes` (markdown) head the result's page. `rows`, the
        frame's row count when the caller knows it: up to IN_MEMORY_UP_TO, GX runs on pandas,
        unless the check names failing rows."""
        gx = self._gx
        names_failures = bool(index_columns) and bool(unexpected_rows)
        in_memory = rows is not None and rows <= IN_MEMORY_UP_TO and not names_failures
        meta = {"notes": {"format": "markdown", "content": list(notes)}} if notes else None
        suite = self.context.suites.add_or_update(gx.ExpectationSuite(name=name, expectations=expectations, meta=meta))
        definition = self.context.validation_definitions.add_or_update(
            # One definition per engine: a stored definition names its data source's asset.
            gx.ValidationDefinition(
                name=f"{name} (in memory)" if in_memory else name,
                data=self._batch_definition(name, in_memory),
                suite=suite,
            )
        )
        # With nothing unexpected, COMPLETE would list nothing, at the cost of more Spark jobs.
        complete = unexpected_rows is not None and 0 < unexpected_rows <= COMPLETE_UP_TO
        result_format = {"result_format": "COMPLETE" if complete else "SUMMARY", "partial_unexpected_count": 10}
        if index_columns:
            result_format["unexpected_index_column_names"] = list(index_columns)
        data = frame.toPandas() if in_memory else frame
        result = definition.run(batch_parameters={"dataframe": data}, result_format=result_format, run_id=self.run_id)
        if asset:
            self._name_asset(result, asset)
        for item in result.results:
            details = item.result or {}
            self.results.append(
                {
                    "suite": name,
                    "engine": "pandas" if in_memory else "spark",
                    "expectation": _describe(item.expectation_config),
                    "success": bool(item.success),
                    "unexpected_count": details.get("unexpected_count"),
                    "examples": [
                        str(x)
                        for x in details.get("partial_unexpected_index_list")
                        or details.get("partial_unexpected_list")
                        or []
                    ][:5],
                }
            )
        return bool(result.success)

    def _name_asset(self, result, asset: str) -> None:
        """A dataframe's batch has no asset name, and the page would say "Data asset: None":
        store the result again with the name of what was checked."""
        from great_expectations.data_context.types.resource_identifiers import (
            ExpectationSuiteIdentifier,
            ValidationResultIdentifier,
        )

        result.meta["batch_spec"] = {**(result.meta.get("batch_spec") or {}), "data_asset_name": asset}
        batch = result.meta["active_batch_definition"]  # its id is how GX names the stored result
        key = ValidationResultIdentifier(
            expectation_suite_identifier=ExpectationSuiteIdentifier(name=result.suite_name),
            run_id=self.run_id,
            batch_identifier=f"{batch['datasource_name']}-{batch['data_asset_name']}",
        )
        self.context.validation_results_store.set(key, result)

    def publish(self) -> str:
        self.context.build_data_docs()
        urls = self.context.get_docs_sites_urls()
        return urls[0]["site_url"] if urls else ""

"""Great Expectations plumbing: validate Spark frames against suites, keep the results, and
publish them as Data Docs (HTML) next to a machine-readable summary."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame

RESULT_FORMAT = "SUMMARY"


def _describe(config) -> str:
    kwargs = config.kwargs
    target = (
        kwargs.get("column")
        or kwargs.get("column_list")
        or (f"{kwargs.get('column_A')} vs {kwargs.get('column_B')}" if "column_A" in kwargs else "")
    )
    return f"{config.type}({target})"


class Evidence:
    """One GX file context under `root`; `check` validates, `publish` writes the Data Docs."""

    def __init__(self, root: Path) -> None:
        import great_expectations as gx

        self._gx = gx
        root.mkdir(parents=True, exist_ok=True)
        self.context = gx.get_context(mode="file", project_root_dir=str(root))
        from great_expectations.data_context.types.base import ProgressBarsConfig

        # A tqdm bar per validation is noise in job logs.
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.source = self.context.data_sources.add_or_update_spark(name="lake")
        self.results: list[dict] = []

    def _batch_definition(self, name: str):
        try:
            asset = self.source.get_asset(name)
        except LookupError:
            asset = self.source.add_dataframe_asset(name=name)
        try:
            return asset.get_batch_definition("whole")
        except KeyError:
            return asset.add_batch_definition_whole_dataframe("whole")

    def check(self, name: str, frame: DataFrame, expectations: list, index_columns: Sequence[str] = ()) -> bool:
        gx = self._gx
        suite = self.context.suites.add_or_update(gx.ExpectationSuite(name=name, expectations=expectations))
        definition = self.context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=name, data=self._batch_definition(name), suite=suite)
        )
        result_format = {"result_format": RESULT_FORMAT, "partial_unexpected_count": 5}
        if index_columns:
            result_format["unexpected_index_column_names"] = list(index_columns)
        result = definition.run(batch_parameters={"dataframe": frame}, result_format=result_format)
        for item in result.results:
            details = item.result or {}
            self.results.append(
                {
                    "suite": name,
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

    def publish(self) -> str:
        self.context.build_data_docs()
        urls = self.context.get_docs_sites_urls()
        return urls[0]["site_url"] if urls else ""

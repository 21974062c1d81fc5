"""Modules a pure transform uses that one runtime lacks: Airflow on MWAA imports the gold
declarations (eo/core/gold/, for the tables' names and paths) without numpy, pandas or pyspark,
and never calls the functions that need them. Such a module stands in for the missing one and
names it at the first use, instead of failing the import of every declaration."""

from __future__ import annotations

import importlib
from types import ModuleType


class Missing:
    """A module that is not installed here: any use says which, and that only a job needs it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        raise ModuleNotFoundError(
            f"{self._name} is not installed here ({attr} asked for): the jobs' environment has it"
        )


def module(name: str) -> ModuleType | Missing:
    """`importlib.import_module(name)`, or a `Missing` stand-in where it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return Missing(name)

"""Each declared source's generator: what `python -m producer generate`, the demo and the fault lab
publish for the source a process serves (EO_SOURCE)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from eo.core.sources import SOURCE_VARIABLE
from producer import generator, orders


class SourceGenerator(NamedTuple):
    """How `generate` makes a source's stream: the generator class (ClickstreamGenerator's
    signature) and the words for the days its event times fall on."""

    make: Callable[..., generator.ClickstreamGenerator | orders.OrdersGenerator]
    covered_days: Callable[[float], str]


GENERATORS = {
    "clicks": SourceGenerator(generator.ClickstreamGenerator, generator.covered_days),
    "orders": SourceGenerator(orders.OrdersGenerator, orders.covered_days),
}


class NoGenerator(ValueError):
    """A declared source `generate` has no generator for: its text is the one line to print."""


def generator_for(source: str) -> SourceGenerator:
    """The generator of the source named `source`; NoGenerator, in one line, for another name."""
    if source not in GENERATORS:
        raise NoGenerator(
            f"{SOURCE_VARIABLE}={source}: `python -m producer generate` has no generator for this source "
            f"(it generates {', '.join(GENERATORS)}); publish its records with `python -m producer replay --file F`"
        )
    return GENERATORS[source]

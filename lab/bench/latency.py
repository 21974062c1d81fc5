"""The latency arithmetic: percentiles and CDF over per-event latencies, and the sustained-rate search.

Per event: (commit time in gold of the micro-batch that committed it) - (its Kafka timestamp),
lab/bench/commit_log.py. An event not committed when the figures are taken counts as infinitely
late, so it can only make a percentile worse, never drop out of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

CDF_LEVELS = (*(i / 100 for i in range(100)), 0.995, 0.999, 1.0)
SUSTAINED_P99_LIMIT_S = 10.0
# A step whose producer offered less than this share of its rate did not try that rate.
RATE_SHORTFALL = 0.9


def distribution(latencies: np.ndarray, expected: int | None = None) -> dict:
    """p50, p99, max and a CDF (seconds at each level) of `latencies` (NaN: not committed).

    `expected`: how many events should be there; the ones not found count as not committed."""
    values = np.asarray(latencies, dtype=float)
    found = int(np.count_nonzero(~np.isnan(values)))
    missing = max(0, (expected if expected is not None else len(values)) - found)
    if found + missing == 0:
        return {"events": 0, "missing": 0, "p50_s": None, "p99_s": None, "max_s": None, "cdf": []}
    full = np.concatenate([values[~np.isnan(values)], np.full(missing, np.inf)])
    quantiles = np.quantile(full, CDF_LEVELS, method="inverted_cdf")

    def seconds(q: float) -> float | None:
        return None if not np.isfinite(q) else round(float(q), 3)

    cdf = [[seconds(q), level] for q, level in zip(quantiles, CDF_LEVELS, strict=True) if np.isfinite(q)]
    return {
        "events": found,
        "missing": missing,
        "p50_s": seconds(float(np.quantile(full, 0.5, method="inverted_cdf"))),
        "p99_s": seconds(float(np.quantile(full, 0.99, method="inverted_cdf"))),
        "max_s": seconds(float(full.max())),
        "min_s": seconds(float(full.min())),
        "cdf": cdf,
    }


def step_verdict(step: dict, limit: float = SUSTAINED_P99_LIMIT_S) -> str | None:
    """None when the step's rate was sustained: the producer really offered it and p99 is within
    the limit; otherwise why not."""
    p99, achieved = step.get("p99_s"), step.get("achieved_events_per_s") or 0
    if achieved < RATE_SHORTFALL * step["rate"]:
        return f"the producer offered only {achieved:,}/s"
    if p99 is None or p99 > limit:
        return f"p99 {p99} s over {limit} s"
    return None


def search_sustained_rate(
    rates: Sequence[int], try_rate: Callable[[int], dict], limit: float = SUSTAINED_P99_LIMIT_S, log=print
) -> dict:
    """Offer each rate in turn (rising) with `try_rate(rate)` -> {rate, achieved_events_per_s, p99_s, ...};
    stop at the first one that does not hold. The highest achieved rate that held is the figure
    (0 when none did: below the first rate tried)."""
    steps, best = [], 0
    for rate in sorted(rates):
        step = {**try_rate(rate), "rate": rate}
        step["why_not"] = step_verdict(step, limit)
        step["held"] = step["why_not"] is None
        steps.append(step)
        log(f"   {rate:,}/s: p99 {step.get('p99_s')} s -> {'held' if step['held'] else step['why_not']}")
        if not step["held"]:
            break
        best = max(best, step["achieved_events_per_s"])
    return {"limit_p99_s": limit, "steps": steps, "max_sustained_events_per_s": best}


def median_and_spread(values: Sequence[float]) -> dict:
    """Median, min, max and the 10th/90th percentiles of a few repeated timings."""
    if not values:
        return {"median_s": None, "min_s": None, "max_s": None, "p10_s": None, "p90_s": None, "n": 0}
    array = np.asarray(values, dtype=float)
    return {
        "median_s": round(float(np.median(array)), 3),
        "min_s": round(float(array.min()), 3),
        "max_s": round(float(array.max()), 3),
        "p10_s": round(float(np.quantile(array, 0.1)), 3),
        "p90_s": round(float(np.quantile(array, 0.9)), 3),
        "n": len(values),
    }

"""Ratios from quads of two runs back to back (A, B, B, A), for `tools/bench --paired` and
`tools/bench-redis --paired`: what a shared machine, whose speed drifts by several per cent
from one run to the next, cannot turn into a verdict by chance.

A quad's two runs of each see the same moment of the machine; the drift within the quad cancels
to first order (A before and after B). The verdict asks the whole 95 % interval of the median
to clear the target, so that it holds however the quads happened to fall.
"""
import random
import statistics

HEADER = ("| ratio | median of the quads | 95 % interval of the median | quads' lowest–highest | target | |\n"
          "| --- | ---: | ---: | ---: | ---: | --- |")


def quad_ratio(a1, b1, b2, a2):
    """A ÷ B by rate, from seconds: B's two runs over A's two."""
    return (b1 + b2) / (a1 + a2)


def interval(ratios, seed=35, resamples=10_000):
    """The bootstrap 95 % interval of the median: the 2.5th and 97.5th percentiles of the
    medians of `resamples` resamples (with replacement) of the quads."""
    generator = random.Random(seed)
    medians = sorted(statistics.median(generator.choices(ratios, k=len(ratios))) for _ in range(resamples))
    return medians[int(resamples * 0.025) - 1], medians[int(resamples * 0.975) - 1]


def verdict(low, high, target):
    if low >= target:
        return "met"
    if high < target:
        return "MISSED"
    return "not decided: the spread straddles it (run more quads)"


def row(name, ratios, target):
    """One line of the table under HEADER."""
    median = statistics.median(ratios)
    low, high = interval(ratios)
    return (f"| {name} | {median:.3f}× | {low:.3f}–{high:.3f}× | {min(ratios):.2f}–{max(ratios):.2f}× "
            f"| ≥ {target:.2f}× | {verdict(low, high, target)} |")

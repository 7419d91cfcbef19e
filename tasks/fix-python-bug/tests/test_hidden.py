"""The task's own tests plus a few more cases, run against the agent's /app/stats/stats.py."""
import math
import sys

import pytest

sys.path.insert(0, "/app/stats")
from stats import mean, median, percentile, variance  # noqa: E402


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5
    assert mean([7]) == 7


@pytest.mark.parametrize("values,expected", [([3, 1, 2], 2), ([4, 1, 3, 2], 2.5), ([5], 5),
                                             ([10, 0], 5), ([1, 1, 2, 8, 9, 100], 5)])
def test_median(values, expected):
    assert median(values) == expected


@pytest.mark.parametrize("p,expected", [(50, 35), (25, 20), (75, 40), (100, 50), (10, 15),
                                        (30, 20), (40, 20), (41, 35), (1, 15), (5, 15)])
def test_percentile_nearest_rank(p, expected):
    assert percentile([15, 20, 35, 40, 50], p) == expected


def test_variance_population():
    assert variance([2, 4, 4, 4, 5, 5, 7, 9]) == 4
    assert math.isclose(variance([1, 2, 3, 4]), 1.25)

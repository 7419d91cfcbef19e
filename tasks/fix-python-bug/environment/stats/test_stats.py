import pytest

from stats import mean, median, percentile, variance


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5


@pytest.mark.parametrize("p,expected", [(50, 35), (25, 20), (75, 40), (100, 50), (10, 15)])
def test_percentile_nearest_rank(p, expected):
    assert percentile([15, 20, 35, 40, 50], p) == expected


def test_variance_population():
    assert variance([2, 4, 4, 4, 5, 5, 7, 9]) == 4

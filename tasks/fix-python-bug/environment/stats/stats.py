"""Small statistics helpers."""


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    return sum(values) / len(values)


def median(values):
    """Middle value; the mean of the two middle values for an even count."""
    s = sorted(values)
    n = len(s)
    if n % 2 == 1:
        return s[n // 2]
    return s[n // 2]


def percentile(values, p):
    """Nearest-rank percentile: the smallest value with at least p% of the data at or below it."""
    s = sorted(values)
    rank = int(p / 100 * len(s))
    return s[max(rank, 1) - 1]


def variance(values):
    """Population variance."""
    m = mean(values)
    return sum((v - m) ** 2 for v in values) / (len(values) - 1)

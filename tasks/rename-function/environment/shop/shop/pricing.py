def calc_total(items, tax=0.2):
    """Total of (price, qty) pairs including tax, rounded to cents."""
    net = sum(price * qty for price, qty in items)
    return round(net * (1 + tax), 2)


def calc_totals_legacy(orders):
    """Old API: one total per order, no tax."""
    return [sum(p * q for p, q in order) for order in orders]


_cache = {}


def recalc_total_cache(key, items):
    _cache[key] = calc_total(items)
    return _cache[key]

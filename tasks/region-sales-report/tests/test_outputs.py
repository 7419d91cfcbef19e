import os
from pathlib import Path

from gen import totals

TOTALS = totals(int(os.environ.get("TC_INSTANCE", "0")))


def rows():
    lines = [ln.strip() for ln in Path("/app/report.csv").read_text().splitlines() if ln.strip()]
    assert lines[0] == "region,revenue"
    return [ln.split(",") for ln in lines[1:]]


def test_totals():
    got = {region: value for region, value in rows()}
    assert set(got) == set(TOTALS)
    for region, cents in TOTALS.items():
        assert got[region] == f"{cents // 100}.{cents % 100:02d}", region


def test_sorted_by_revenue_descending():
    values = [float(v) for _, v in rows()]
    assert values == sorted(values, reverse=True)

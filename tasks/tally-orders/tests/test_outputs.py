import os
from collections import Counter
from pathlib import Path

from gen import order_files

SEED = int(os.environ.get("TC_INSTANCE", "0"))
DATA = Path("/data")


def test_count():
    assert (DATA / "count.txt").read_text().strip() == str(len(order_files(SEED)))


def test_summary():
    items = Counter("".join(order_files(SEED).values()).splitlines())
    want = [(n, item) for item, n in sorted(items.items())]
    got = []
    for line in (DATA / "summary.txt").read_text().splitlines():
        count, item = line.split()
        got.append((int(count), item))
    assert got == want


def test_orders_moved_to_done():
    got = {p.name: p.read_text() for p in (DATA / "done").iterdir()}
    assert got == order_files(SEED)
    assert list((DATA / "orders").iterdir()) == []

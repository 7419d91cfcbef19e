"""Order exports of one instance: gen.py SEED [ROOT]. The verifier imports files(), staged()
and summary(). Keep this file identical in environment/ and tests/."""
import random
import sys
from pathlib import Path

HEADER = "order_id,date,region,amount,status"
REGIONS = ["EU", "EU", "US", "APAC", "EU-UK", "LATAM"]
STATUSES = ["paid", "paid", "shipped", "refunded", "partially_refunded", "refund_requested",
            "cancelled"]


def _orders(rng: random.Random, year: int, first: int) -> list[str]:
    rows = []
    while True:
        rows = []
        for k in range(rng.randint(60, 110)):
            cents = rng.randint(500, 60000)
            rows.append(f"A{first + k},{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d},"
                        f"{rng.choice(REGIONS)},{cents // 100}.{cents % 100:02d},{rng.choice(STATUSES)}")
        if sum(1 for r in rows if r.split(",")[2] == "EU" and r.split(",")[4] == "refunded") >= 2:
            return rows


def _is_hit(row: str) -> bool:
    f = row.split(",")
    return f[2] == "EU" and f[4] == "refunded"


def _summary(rows: list[str]) -> str:
    hits = [r for r in rows if _is_hit(r)]
    cents = sum(int(r.split(",")[3].replace(".", "")) for r in hits)
    return f"{len(hits)} {cents // 100}.{cents % 100:02d}"


def _build(seed: int):
    rng = random.Random(seed)
    year = rng.choice([2024, 2025])
    old = _orders(rng, year - 1, rng.randint(1000, 5000))
    new = _orders(rng, year, rng.randint(6000, 9000))
    old_staged = "\n".join([HEADER] + [r for r in old if _is_hit(r)]) + "\n"
    n, total = _summary(old).split()
    files = {
        "data/orders.csv": "\n".join([HEADER] + new) + "\n",
        f"data/orders-{year - 1}.csv": "\n".join([HEADER] + old) + "\n",
        f"stage/eu-refunds-{year - 1}.csv": old_staged,
        "notes.txt": f"EU refunds {year - 1}: {n} orders, {total} EUR (staged in stage/).\n",
    }
    return files, new


def files(seed: int) -> dict[str, str]:
    """{path under /app: text} as built."""
    return _build(seed)[0]


def staged(seed: int) -> list[str]:
    """The lines the staged extract must hold: the header, then the matching rows in order."""
    return [HEADER] + [r for r in _build(seed)[1] if _is_hit(r)]


def summary(seed: int) -> str:
    """The summary line `COUNT TOTAL`."""
    return _summary(_build(seed)[1])


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app")
    for name, text in files(int(sys.argv[1])).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)

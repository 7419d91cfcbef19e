"""Generates the monthly exports of one instance: gen.py SEED [DIR]. The verifier imports both."""
import csv
import io
import random
import sys
from pathlib import Path

REGIONS = ["north", "south", "east", "west", "central"]
PRODUCTS = ["lamp", "desk", "chair", "shelf", "rug", "mirror"]
COLUMNS = ["date", "region", "product", "units", "unit_price"]


def exports(seed: int) -> dict[str, list[dict[str, str]]]:
    rng = random.Random(seed)
    year = rng.choice([2022, 2023, 2024])
    first = rng.randint(1, 6)
    out = {}
    for month in range(first, first + rng.randint(3, 6)):
        rows = []
        for _ in range(rng.randint(20, 40)):
            rows.append({"date": f"{year}-{month:02d}-{rng.randint(1, 28):02d}",
                         "region": rng.choice(REGIONS), "product": rng.choice(PRODUCTS),
                         "units": str(rng.randint(1, 12)),
                         "unit_price": f"{rng.randint(500, 40000) / 100:.2f}"})
        out[f"sales-{year}-{month:02d}.csv"] = rows
    return out


def render(seed: int) -> dict[str, str]:
    rng = random.Random(seed * 7919 + 1)
    files = {}
    for name, rows in exports(seed).items():
        cols = COLUMNS[:]
        if rng.random() < 0.6:
            rng.shuffle(cols)
        buf = io.StringIO()
        w = csv.DictWriter(buf, cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        files[name] = buf.getvalue()
    return files


def totals(seed: int) -> dict[str, int]:
    """Revenue per region in cents (exact)."""
    tot: dict[str, int] = {}
    for rows in exports(seed).values():
        for r in rows:
            cents = int(r["units"]) * round(float(r["unit_price"]) * 100)
            tot[r["region"]] = tot.get(r["region"], 0) + cents
    return tot


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app/data")
    root.mkdir(parents=True, exist_ok=True)
    for name, text in render(int(sys.argv[1])).items():
        (root / name).write_text(text)
    (root / "README.txt").write_text("Exports from the shop systems, one file per month.\n"
                                     "Prices are in EUR per unit.\n")

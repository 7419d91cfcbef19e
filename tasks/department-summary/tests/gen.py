"""Generates the staff list of one instance: gen.py SEED [FILE]. The verifier imports both."""
import csv
import io
import random
import sys
from datetime import date, timedelta
from pathlib import Path

FIRST = ["Ana", "Ben", "Chloé", "Dmitri", "Eve", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kemal",
         "Lena", "Mo", "Nia", "Otto", "Pia", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Vik"]
LAST = ["Smith", "Okafor", "Novak", "Garcia", "Li", "Berg", "Haddad", "Kowalski", "Sato"]
DEPTS = ["Engineering", "Sales", "Support", "Finance", "Legal, Compliance", "Marketing"]


def staff(seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    depts = rng.sample(DEPTS, rng.randint(4, 6))
    days = rng.sample(range(0, 4000), 60)
    rows = []
    for i in range(rng.randint(30, 55)):
        last, first = rng.choice(LAST), rng.choice(FIRST)
        name = f"{last}, {first}" if rng.random() < 0.3 else f"{first} {last}"
        d = days[i]
        rows.append({"id": str(1000 + i), "name": name, "department": rng.choice(depts),
                     "salary": str(rng.randint(38, 160) * 500),
                     "start_date": (date(2012, 1, 1) + timedelta(days=d)).isoformat()})
    return rows


def render(seed: int) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, ["id", "name", "department", "salary", "start_date"],
                       lineterminator="\n")
    w.writeheader()
    w.writerows(staff(seed))
    return buf.getvalue()


def summary(seed: int) -> dict:
    out: dict = {}
    for dept in sorted({r["department"] for r in staff(seed)}):
        rows = [r for r in staff(seed) if r["department"] == dept]
        sal = [int(r["salary"]) for r in rows]
        out[dept] = {"headcount": len(rows), "avg_salary": round(sum(sal) / len(sal), 2),
                     "newest": max(rows, key=lambda r: r["start_date"])["name"]}
    return out


if __name__ == "__main__":
    Path(sys.argv[2] if len(sys.argv) > 2 else "/app/employees.csv").write_text(render(int(sys.argv[1])))

"""The ledger of one instance: gen.py SEED [ROOT]. The verifier imports build() and
INBOX_FILES. Keep this file identical in environment/ and tests/."""
import random
import sys
from pathlib import Path

ACCOUNTS = ["cash", "bank", "sales", "rent", "wages", "stock", "tax"]


def _rows(rng: random.Random, period: str, n: int) -> str:
    return "".join(f"{period}-{rng.randint(1, 28):02d},{rng.choice(ACCOUNTS)},"
                   f"{rng.randint(100, 99999) / 100:.2f}\n" for _ in range(n))


def build(seed: int) -> dict[str, str]:
    """{path under /app: text} as built: the open period, the ledger so far, the inbox."""
    rng = random.Random(seed)
    month = rng.randint(2, 12)
    period, before = f"2024-{month:02d}", f"2024-{month - 1:02d}"
    files = {"state/period": period + "\n",
             "ledger.csv": "date,account,amount\n" + _rows(rng, before, rng.randint(4, 9))}
    for k in range(1, rng.randint(2, 4) + 1):
        files[f"inbox/b{k:02d}.csv"] = _rows(rng, period, rng.randint(2, 6))
    return files


def inbox_files(seed: int) -> dict[str, str]:
    """{file name: text} of the inbox as built, in the order a shell glob lists them."""
    return {p.split("/", 1)[1]: t for p, t in sorted(build(seed).items())
            if p.startswith("inbox/")}


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app")
    for path, text in build(int(sys.argv[1])).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "archive").mkdir(exist_ok=True)

"""Generates the data tree of one instance: gen.py SEED [DIR]. The verifier imports tree()."""
import random
import sys
from pathlib import Path

DIRS = ["", "cache", "cache/img", "exports", "exports/2023", "exports/2024", "tmp", "home/ana",
        "home/ben/projects", "logs", "logs/old"]
STEMS = ["dump", "report", "thumb", "session", "backup", "index", "notes", "trace", "archive"]
EXTS = [".bin", ".csv", ".log", ".json", ".dat", ".txt"]


def tree(seed: int) -> dict[str, int]:
    """{absolute path: size in bytes}; all non-zero sizes are distinct."""
    rng = random.Random(seed)
    sizes = rng.sample(range(1, 200_000), 40)
    out: dict[str, int] = {}
    n = rng.randint(28, 40)
    while len(out) < n:
        d = rng.choice(DIRS)
        path = f"/app/data/{d + '/' if d else ''}{rng.choice(STEMS)}-{rng.randint(1, 99)}{rng.choice(EXTS)}"
        if path not in out:
            out[path] = 0 if rng.random() < 0.2 else sizes[len(out)]
    return out


if __name__ == "__main__":
    for d in DIRS:
        Path("/app/data", d).mkdir(parents=True, exist_ok=True)
    for path, size in tree(int(sys.argv[1])).items():
        Path(path).write_bytes(b"x" * size)

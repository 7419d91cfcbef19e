"""Generates the inbox of one instance: gen.py SEED [DIR]. The verifier imports files()."""
import random
import sys
from pathlib import Path

EXTS = ["txt", "csv", "json", "log", "md", "py"]
WORDS = ["report", "notes", "budget", "draft", "summary", "invoice", "backup", "photo-list",
         "todo", "minutes", "config", "export"]


def files(seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    exts = rng.sample(EXTS, 4)
    out: dict[str, str] = {}
    n = rng.randint(12, 18)
    while len(out) < n:
        name = f"{rng.choice(WORDS)}-{rng.randint(100, 999)}.{rng.choice(exts)}"
        out[name] = f"{name}\n{rng.randint(0, 10**9)}\n"
    return out


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app/inbox")
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files(int(sys.argv[1])).items():
        (root / name).write_text(text)

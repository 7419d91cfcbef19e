"""The user lists of one instance: gen.py SEED [ROOT]. The verifier imports build() and
allowed(). Keep this file identical in environment/ and tests/."""
import random
import string
import sys
from pathlib import Path


def _name(rng: random.Random) -> str:
    # lowercase letters only: every locale's sort and comm order them alike
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 8)))


def build(seed: int) -> dict[str, str]:
    """{path under /app: text} as built: two unsorted lists sharing names, the banned list."""
    rng = random.Random(seed)
    pool = sorted({_name(rng) for _ in range(40)})
    a = rng.sample(pool, rng.randint(8, 14))
    b = rng.sample(pool, rng.randint(8, 14)) + rng.sample(a, 2)  # overlaps and duplicates
    banned = rng.sample(sorted(set(a) | set(b)), 3) + rng.sample(pool, 2)
    rng.shuffle(b)
    return {"users/a.txt": "\n".join(a) + "\n", "users/b.txt": "\n".join(b) + "\n",
            "banned.txt": "\n".join(banned) + "\n"}


def allowed(seed: int) -> list[str]:
    """The names of either list that are not banned, sorted, once each."""
    files = build(seed)
    names = set(files["users/a.txt"].split()) | set(files["users/b.txt"].split())
    return sorted(names - set(files["banned.txt"].split()))


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app")
    for path, text in build(int(sys.argv[1])).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "out").mkdir(exist_ok=True)

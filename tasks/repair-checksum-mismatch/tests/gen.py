"""Release files, manifests and mirror of one instance: gen.py SEED [ROOT]. The verifier imports
files(), good() and damaged(). Keep this file identical in environment/ and tests/."""
import hashlib
import random
import sys
from pathlib import Path

POOL = ["server.bin", "cli.bin", "plugins.tar", "schema.sql", "locale.dat", "docs.html",
        "agent.bin", "config.json", "migrate.bin"]


def _manifest(tree: dict[str, bytes]) -> bytes:
    return "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in sorted(tree.items())).encode()


def _build(seed: int):
    rng = random.Random(seed)
    names = rng.sample(POOL, rng.randint(5, 7))
    bad = rng.choice(names)
    good = {n: rng.randbytes(rng.randint(200, 2000)) for n in names}
    # the previous build: every file but the damaged one (and one more that is unchanged) differs
    same = {bad, rng.choice([n for n in names if n != bad])}
    prev = {n: (good[n] if n in same else rng.randbytes(rng.randint(200, 2000))) for n in names}
    broken = bytearray(good[bad])
    at = rng.randrange(len(broken) - 16)
    broken[at:at + 16] = bytes(b ^ 0x5A for b in broken[at:at + 16])  # same size, other bytes
    files = {f"release/{n}": (bytes(broken) if n == bad else d) for n, d in good.items()}
    files["release/SHA256SUMS"] = _manifest(good)
    files["release/SHA256SUMS.old"] = _manifest(prev)
    files.update({f"mirror/{n}": d for n, d in prev.items()})
    files["mirror/SHA256SUMS"] = _manifest(prev)
    return files, good, bad


def files(seed: int) -> dict[str, bytes]:
    """{path under /app: bytes} as built (one release file damaged)."""
    return _build(seed)[0]


def good(seed: int) -> dict[str, bytes]:
    """{file name: bytes} of the release as the manifest describes it."""
    return _build(seed)[1]


def damaged(seed: int) -> str:
    return _build(seed)[2]


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app")
    for name, data in files(int(sys.argv[1])).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)

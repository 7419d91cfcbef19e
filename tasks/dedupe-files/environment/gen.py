"""Generates the photo folder of one instance: gen.py SEED [DIR]. The verifier imports files()."""
import random
import sys
from pathlib import Path


def files(seed: int) -> dict[str, bytes]:
    rng = random.Random(seed)
    names = [f"img-{i:04d}.dat" for i in rng.sample(range(1, 10000), rng.randint(16, 24))]
    originals: list[bytes] = []
    out: dict[str, bytes] = {}
    for name in names:
        if originals and rng.random() < 0.4:
            out[name] = rng.choice(originals)  # a duplicate of an earlier file
        else:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randint(200, 2000)))
            originals.append(data)
            out[name] = data
    return out


def expected(seed: int) -> tuple[dict[str, bytes], list[str]]:
    """(files that stay, names deleted)."""
    keep: dict[bytes, str] = {}
    removed = []
    for name, data in sorted(files(seed).items()):
        if data in keep:
            removed.append(name)
        else:
            keep[data] = name
    return {n: d for d, n in keep.items()}, sorted(removed)


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app/photos")
    root.mkdir(parents=True, exist_ok=True)
    for name, data in files(int(sys.argv[1])).items():
        (root / name).write_bytes(data)

"""PostgreSQL node configs of one instance: gen.py SEED [DIR]. The verifier imports files(),
primary() and expected(). Keep this file identical in environment/ and tests/."""
import random
import sys
from pathlib import Path

CITIES = ["amsterdam", "berlin", "dublin", "frankfurt", "lisbon", "madrid", "oslo", "paris",
          "vienna", "warsaw"]
NEW_PORT = 6432


def _layout(seed: int) -> tuple[random.Random, list[str], str, str]:
    rng = random.Random(seed)
    names = sorted(f"pg-{c}" for c in rng.sample(CITIES, rng.randint(4, 6)))
    primary, former = rng.sample(names, 2)  # former: the primary before the failover
    return rng, names, primary, former


def primary(seed: int) -> str:
    """The file name of the current primary's config."""
    return _layout(seed)[2] + ".conf"


def files(seed: int) -> dict[str, str]:
    """{file name in /app/conf: text} as built."""
    rng, names, prim, former = _layout(seed)
    day = rng.randint(2, 27)
    out = {}
    for name in names:
        head = [f"# PostgreSQL node {name}",
                f"host = 10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                f"port = {rng.choice([5432, 5433, 5434, 5435])}"]
        tail = [f"max_connections = {rng.choice([100, 150, 200, 300])}",
                f"stats_port = {rng.randint(9100, 9199)}",
                "wal_level = replica"]
        role = "primary" if name == prim else "replica"
        if name == former:
            out[f"{name}.conf.bak"] = "\n".join(head + ["role = primary"] + tail) + "\n"
            head.append(f"# role = primary   (until the failover of 2024-03-{day:02d})")
        out[f"{name}.conf"] = "\n".join(head + [f"role = {role}"] + tail) + "\n"
    out["NOTES.md"] = (f"# Cluster notes\n\nPrimary: {former} (the replicas stream from it).\n"
                       f"Connection pooling will move the primary to port {NEW_PORT} later.\n")
    return out


def expected(seed: int) -> dict[str, str]:
    """The files after the task: the primary's port line set to NEW_PORT, nothing else."""
    out = files(seed)
    name = primary(seed)
    out[name] = "".join(f"port = {NEW_PORT}\n" if ln.startswith("port = ") else ln
                        for ln in out[name].splitlines(keepends=True))
    return out


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app/conf")
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files(int(sys.argv[1])).items():
        (root / name).write_text(text)

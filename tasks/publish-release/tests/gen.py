"""The project of one instance: gen.py SEED [ROOT]. The verifier imports build(), versions()
and build_files(). Keep this file identical in environment/ and tests/."""
import os
import random
import sys
from pathlib import Path

# build file names: no spaces, none named MANIFEST or current, no dot files
NAMES = ["app", "cli", "server", "worker", "README", "LICENSE", "config.json", "settings.yaml",
         "app.py", "schema.sql", "notes.txt", "routes.conf", "index.html", "style.css"]
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "lambda"]


def _text(rng: random.Random, name: str, version: str) -> str:
    lines = [f"{name} {version} {rng.getrandbits(32):08x}"]
    lines += [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
              for _ in range(rng.randint(1, 5))]
    return "\n".join(lines) + "\n"


def versions(seed: int) -> tuple[str, str]:
    """(the version to publish, the older release's version): never the same."""
    rng = random.Random(seed)
    maj, mnr, patch = rng.randint(1, 9), rng.randint(1, 12), rng.randint(0, 15)
    if rng.random() < 0.5 and patch > 0:
        older = f"{maj}.{mnr}.{rng.randint(0, patch - 1)}"
    else:
        older = f"{maj}.{rng.randint(0, mnr - 1)}.{rng.randint(0, 15)}"
    return f"{maj}.{mnr}.{patch}", older


def build(seed: int) -> dict[str, str]:
    """{path under /app: text} as built: VERSION, build/*, the older release rel/<older>/*
    (with its MANIFEST); rel/current -> <older> is the one link (see __main__)."""
    version, older = versions(seed)
    rng = random.Random(f"files-{seed}")
    names = rng.sample(NAMES, rng.randint(2, 5)) + [f"lib{rng.randint(1, 9)}.a"]
    rng.shuffle(names)
    files = {"VERSION": version + "\n"}
    for name in names:
        files[f"build/{name}"] = _text(rng, name, version)
    old_names = sorted(rng.sample(names, rng.randint(2, len(names))))
    for name in old_names:
        files[f"rel/{older}/{name}"] = _text(rng, name, older)
    files[f"rel/{older}/MANIFEST"] = "".join(n + "\n" for n in old_names)
    return files


def build_files(seed: int) -> dict[str, str]:
    """{file name: text} of /app/build as built."""
    return {p.split("/", 1)[1]: t for p, t in sorted(build(seed).items())
            if p.startswith("build/")}


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app")
    seed = int(sys.argv[1])
    for path, text in build(seed).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    os.symlink(versions(seed)[1], root / "rel" / "current")

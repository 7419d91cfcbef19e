"""Release archives of one instance: gen.py SEED [ROOT]. The verifier imports release(),
files() and FIXED. Keep this file identical in environment/ and tests/."""
import gzip
import io
import random
import sys
import tarfile
from pathlib import Path

APPS = ["shop", "billing", "portal", "tracker", "gateway", "ledger"]
FIXED = "warn"  # the log level production must get


def _ini(rng: random.Random, level: str) -> str:
    return (f"[server]\nworkers = {rng.randint(2, 16)}\nlog_level = {level}\n"
            f"timeout = {rng.choice([15, 30, 60])}\n\n[db]\npool_size = {rng.randint(5, 40)}\n")


def _tree(rng: random.Random, top: str, prod_level: str) -> dict[str, tuple[bytes, int]]:
    """{member path: (content, mode)} of one release."""
    app, version = top.rsplit("-", 1)
    return {
        f"{top}/VERSION": (f"{version}\n".encode(), 0o644),
        f"{top}/README.md": (f"# {app} {version}\n\nStart with bin/start.sh; the config is picked "
                             "by the APP_ENV variable from conf/.\n".encode(), 0o644),
        f"{top}/bin/start.sh": (f"#!/bin/sh\nexec {app}-server --config conf/$APP_ENV.ini\n".encode(), 0o755),
        f"{top}/conf/production.ini": (_ini(rng, prod_level).encode(), 0o644),
        f"{top}/conf/staging.ini": (_ini(rng, rng.choice(["info", "debug"])).encode(), 0o644),
        f"{top}/conf/development.ini": (_ini(rng, "debug").encode(), 0o644),
    }


def _pack(tree: dict[str, tuple[bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        dirs = sorted({"/".join(p.split("/")[:i]) for p in tree for i in range(1, p.count("/") + 1)})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 1700000000
            tar.addfile(info)
        for path, (data, mode) in tree.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), mode, 1700000000
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), mtime=0)


def _build(seed: int):
    rng = random.Random(seed)
    app = rng.choice(APPS)
    major, minor = rng.randint(1, 4), rng.randint(1, 9)
    top = f"{app}-{major}.{minor}.{rng.randint(0, 9)}"
    prev_top = f"{app}-{major}.{minor - 1}.{rng.randint(0, 9)}"
    release = _tree(rng, top, rng.choice(["debug", "trace"]))
    prev = _tree(rng, prev_top, "info")
    deployed = release[f"{top}/conf/production.ini"][0]  # the copy on the server, a decoy
    return top, release, {"dist/release.tar.gz": _pack(release),
                          "dist/release-prev.tar.gz": _pack(prev),
                          "deploy/production.ini": deployed}


def release(seed: int) -> tuple[str, dict[str, tuple[bytes, int]]]:
    """(top folder, {member path: (content, mode)}) of the release as built."""
    top, tree, _ = _build(seed)
    return top, tree


def files(seed: int) -> dict[str, bytes]:
    """{path under /app: bytes} as built."""
    return _build(seed)[2]


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app")
    for name, data in files(int(sys.argv[1])).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)

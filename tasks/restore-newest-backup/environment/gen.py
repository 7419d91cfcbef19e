"""Site backups of one instance: gen.py SEED [ROOT]. The verifier imports backups(), live(),
newest() and NOTES. Keep this file identical in environment/ and tests/."""
import datetime
import gzip
import io
import os
import random
import sys
import tarfile
from pathlib import Path

THEMES = ["light", "dark", "solar", "mono", "paper"]
NAMES = ["Corner Bakery", "Hill Garage", "Blue Canoe", "Tea House", "North Books"]
TARGET = "site/config/settings.yml"


def _settings(rng: random.Random, name: str, day: datetime.date) -> bytes:
    return (f"# site settings\nsite_name: {name}\ntheme: {rng.choice(THEMES)}\n"
            f"cache_ttl: {rng.randint(1, 120) * 30}\nposts_per_page: {rng.randint(5, 25)}\n"
            f"saved: {day.isoformat()}\n").encode()


def _site(rng: random.Random, name: str, day: datetime.date, edit: str) -> dict[str, bytes]:
    return {
        "site/index.html": f"<h1>{name}</h1>\n<p>{edit} {rng.randint(1, 9999)}</p>\n".encode(),
        "site/static/app.css": f"body {{ color: #{rng.randint(0, 0xFFFFFF):06x}; }}\n".encode(),
        "site/config/routes.yml": f"/: index.html\n/blog: blog/{rng.randint(1, 99)}\n".encode(),
        TARGET: _settings(rng, name, day),
    }


def _pack(tree: dict[str, bytes], mtime: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ["site", "site/config", "site/static"]:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
            tar.addfile(info)
        for path, data in sorted(tree.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, mtime
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), mtime=0)


def _build(seed: int):
    rng = random.Random(seed)
    name = rng.choice(NAMES)
    start = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(0, 200))
    days = sorted(start + datetime.timedelta(days=d) for d in rng.sample(range(1, 120), rng.randint(3, 5) + 1))
    partial_day = days.pop()  # the newest upload never finished
    backups, trees = {}, {}
    for day in days:
        tree = _site(rng, name, day, "backup")
        trees[day] = tree
        backups[f"site-{day:%Y%m%d}.tar.gz"] = (_pack(tree, _stamp(day)), _stamp(day))
    whole = _pack(_site(rng, name, partial_day, "backup"), _stamp(partial_day))
    backups[f"site-{partial_day:%Y%m%d}.tar.gz.partial"] = (whole[: len(whole) // 2], _stamp(partial_day))
    older = rng.choice(days[:-1])
    notes = (f"Restore test {older:%Y-%m-%d}: site-{older:%Y%m%d}.tar.gz restored fine.\n"
             "Uploads that did not finish keep the .partial suffix.\n").encode()
    backups["NOTES.txt"] = (notes, _stamp(older))
    live = _site(rng, name, days[-1] + datetime.timedelta(days=3), "edited")
    del live[TARGET]
    return backups, live, trees[days[-1]][TARGET]


def _stamp(day: datetime.date) -> int:
    return int(datetime.datetime(day.year, day.month, day.day, 2, 30, tzinfo=datetime.timezone.utc).timestamp())


def backups(seed: int) -> dict[str, bytes]:
    """{file name in /app/backups: bytes} as built."""
    return {k: v for k, (v, _) in _build(seed)[0].items()}


def live(seed: int) -> dict[str, bytes]:
    """{path under /app: bytes} of the live site as built (settings.yml deleted)."""
    return _build(seed)[1]


def newest(seed: int) -> bytes:
    """settings.yml as the newest complete backup holds it."""
    return _build(seed)[2]


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app")
    bk, site, _ = _build(int(sys.argv[1]))
    (root / "backups").mkdir(parents=True, exist_ok=True)
    for name, (data, mtime) in bk.items():
        (root / "backups" / name).write_bytes(data)
        os.utime(root / "backups" / name, (mtime, mtime))
    for path, data in site.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)

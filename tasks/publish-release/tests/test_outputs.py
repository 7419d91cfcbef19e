import os
from pathlib import Path

from gen import build, build_files, versions

SEED = int(os.environ.get("TC_INSTANCE", "0"))
APP = Path("/app")
VERSION, OLDER = versions(SEED)


def _folder(path: Path) -> dict[str, bytes]:
    """{name: bytes} of a folder's entries, every one a plain file (no link, no folder)."""
    assert path.is_dir() and not path.is_symlink(), path
    got = {}
    for p in path.iterdir():
        assert p.is_file() and not p.is_symlink(), p
        got[p.name] = p.read_bytes()
    return got


def test_version_and_build_kept():
    assert (APP / "VERSION").read_text() == build(SEED)["VERSION"]
    assert _folder(APP / "build") == {n: t.encode() for n, t in build_files(SEED).items()}


def test_release_holds_the_build_and_its_manifest():
    got = _folder(APP / "rel" / VERSION)
    want = {n: t.encode() for n, t in build_files(SEED).items()}
    want["MANIFEST"] = "".join(n + "\n" for n in sorted(build_files(SEED))).encode()
    assert got == want


def test_current_points_at_the_release():
    link = APP / "rel" / "current"
    assert link.is_symlink() and os.readlink(link) == VERSION


def test_older_release_kept():
    want = {p.split("/", 2)[2]: t.encode() for p, t in build(SEED).items()
            if p.startswith(f"rel/{OLDER}/")}
    assert _folder(APP / "rel" / OLDER) == want
    assert sorted(p.name for p in (APP / "rel").iterdir()) == sorted([OLDER, VERSION, "current"])

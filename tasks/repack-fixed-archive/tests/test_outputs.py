import os
import re
import tarfile
from pathlib import Path

from gen import FIXED, files, release

SEED = int(os.environ.get("TC_INSTANCE", "0"))
TOP, TREE = release(SEED)
PROD = f"{TOP}/conf/production.ini"


def members():
    """{normalised path: (content, mode)} of the regular files in the fixed archive."""
    out = {}
    with tarfile.open("/app/dist/release.tar.gz", "r:gz") as tar:
        for m in tar.getmembers():
            name = re.sub(r"^(\./)+", "", m.name).rstrip("/")
            if m.isfile():
                out[name] = (tar.extractfile(m).read(), m.mode & 0o777)
            else:
                assert m.isdir(), f"unexpected member {m.name}"
                assert name in ("", ".") or TOP == name or name.startswith(TOP + "/"), m.name
    return out


def test_production_log_level_fixed():
    text = members()[PROD][0].decode()
    assert re.findall(r"(?m)^log_level = .*$", text) == [f"log_level = {FIXED}"]
    old = TREE[PROD][0].decode()
    assert text == re.sub(r"(?m)^log_level = .*$", f"log_level = {FIXED}", old)


def test_same_files_otherwise_unchanged():
    got = members()
    assert sorted(got) == sorted(TREE)
    for path, (data, mode) in TREE.items():
        if path != PROD:
            assert got[path] == (data, mode), f"{path} changed"


def test_other_files_untouched():
    for name, data in files(SEED).items():
        if name != "dist/release.tar.gz":
            assert (Path("/app") / name).read_bytes() == data, f"/app/{name} changed"
    assert sorted(p.name for p in Path("/app/dist").iterdir()) == ["release-prev.tar.gz", "release.tar.gz"]

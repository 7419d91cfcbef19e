import os
from pathlib import Path

from gen import DIRS, tree

TREE = tree(int(os.environ.get("TC_INSTANCE", "0")))


def test_largest():
    top = sorted(TREE.items(), key=lambda kv: -kv[1])[:5]
    got = [ln.split(None, 1) for ln in Path("/app/largest.txt").read_text().splitlines() if ln.strip()]
    assert [(int(s), p) for s, p in got] == [(s, p) for p, s in top]


def test_empty_files_deleted_others_kept():
    for path, size in TREE.items():
        if size == 0:
            assert not os.path.lexists(path), f"{path} should be deleted"
        else:
            assert os.path.getsize(path) == size, path
            with open(path, "rb") as f:
                assert f.read(1) == b"x"


def test_directories_kept():
    for d in DIRS:
        assert Path("/app/data", d).is_dir(), d

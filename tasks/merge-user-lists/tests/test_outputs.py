import os
from pathlib import Path

from gen import allowed, build

SEED = int(os.environ.get("TC_INSTANCE", "0"))
APP = Path("/app")


def test_merged_list():
    assert (APP / "out/users.txt").read_text() == "".join(n + "\n" for n in allowed(SEED))


def test_count():
    assert (APP / "out/count.txt").read_text().strip() == str(len(allowed(SEED)))


def test_sources_deleted_banned_kept():
    assert sorted(p.name for p in (APP / "users").iterdir()) == []
    assert (APP / "banned.txt").read_text() == build(SEED)["banned.txt"]

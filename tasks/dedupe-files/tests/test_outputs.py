import os
from pathlib import Path

from gen import expected

KEEP, REMOVED = expected(int(os.environ.get("TC_INSTANCE", "0")))


def test_remaining_files_are_the_first_of_each_group():
    assert sorted(os.listdir("/app/photos")) == sorted(KEEP)


def test_kept_files_unchanged():
    for name, data in KEEP.items():
        assert (Path("/app/photos") / name).read_bytes() == data, name


def test_removed_list():
    assert Path("/app/removed.txt").read_text().split() == REMOVED

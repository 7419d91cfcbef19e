import os
from pathlib import Path

from gen import files

EXPECTED = files(int(os.environ.get("TC_INSTANCE", "0")))


def test_inbox_exists_and_is_empty():
    assert Path("/app/inbox").is_dir()
    assert sorted(os.listdir("/app/inbox")) == []


def test_every_file_sorted_by_extension_unchanged():
    for name, text in EXPECTED.items():
        target = Path("/app/sorted") / name.rsplit(".", 1)[1] / name
        assert target.is_file(), f"missing {target}"
        assert target.read_text() == text, f"content of {target} changed"


def test_no_extra_files():
    found = sorted(p.name for p in Path("/app/sorted").rglob("*") if p.is_file())
    assert found == sorted(EXPECTED)

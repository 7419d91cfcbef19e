import os
from pathlib import Path

from gen import expected, primary

SEED = int(os.environ.get("TC_INSTANCE", "0"))
EXPECTED = expected(SEED)
CONF = Path("/app/conf")


def test_primary_moved_to_new_port():
    assert (CONF / primary(SEED)).read_text() == EXPECTED[primary(SEED)]


def test_other_files_untouched():
    for name, text in EXPECTED.items():
        assert (CONF / name).read_text() == text, f"{name} changed"


def test_no_files_added_or_removed():
    assert sorted(p.name for p in CONF.iterdir()) == sorted(EXPECTED)

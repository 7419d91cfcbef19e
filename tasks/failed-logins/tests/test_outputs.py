import os
from pathlib import Path

from gen import blocklist


def test_blocklist():
    got = [ln.strip() for ln in Path("/app/blocklist.txt").read_text().splitlines() if ln.strip()]
    assert got == blocklist(int(os.environ.get("TC_INSTANCE", "0")))

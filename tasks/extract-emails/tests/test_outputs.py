import os
from pathlib import Path

from gen import mailbox

ADDRESSES = sorted(mailbox(int(os.environ.get("TC_INSTANCE", "0")))[1])


def test_addresses():
    got = [ln.strip() for ln in Path("/app/addresses.txt").read_text().splitlines() if ln.strip()]
    assert got == ADDRESSES

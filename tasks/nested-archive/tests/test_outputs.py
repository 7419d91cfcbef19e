import os
from pathlib import Path

from gen import key


def test_key():
    assert Path("/app/key.txt").read_text().strip() == key(int(os.environ.get("TC_INSTANCE", "0")))

import os
from pathlib import Path

from gen import answer


def test_answer():
    ip, n = answer(int(os.environ.get("TC_INSTANCE", "0")))
    assert Path("/app/answer.txt").read_text().split() == [ip, str(n)]

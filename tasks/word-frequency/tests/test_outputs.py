import os
import re
from collections import Counter
from pathlib import Path

from gen import text


def expected() -> list[str]:
    counts = Counter(w.lower() for w in re.findall(r"[A-Za-z]+", text(int(os.environ.get("TC_INSTANCE", "0")))))
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    return [f"{w} {c}" for w, c in top]


def test_top10():
    got = [ln.strip() for ln in Path("/app/top10.txt").read_text().splitlines() if ln.strip()]
    assert got == expected()

import os
from pathlib import Path

from gen import files, staged, summary

SEED = int(os.environ.get("TC_INSTANCE", "0"))


def test_staged_extract():
    lines = Path("/app/stage/eu-refunds.csv").read_text().splitlines()
    assert [ln.rstrip("\r") for ln in lines if ln.strip()] == staged(SEED)


def test_summary():
    assert Path("/app/summary.txt").read_text().split() == summary(SEED).split()


def test_sources_and_old_stage_untouched():
    for name, text in files(SEED).items():
        assert (Path("/app") / name).read_text() == text, f"/app/{name} changed"
    expected = sorted(n.split("/")[1] for n in files(SEED) if n.startswith("stage/")) + ["eu-refunds.csv"]
    assert sorted(p.name for p in Path("/app/stage").iterdir()) == sorted(expected)

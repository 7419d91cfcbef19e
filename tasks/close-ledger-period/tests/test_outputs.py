import os
from pathlib import Path

from gen import build, inbox_files

SEED = int(os.environ.get("TC_INSTANCE", "0"))
APP = Path("/app")


def _period() -> str:
    return build(SEED)["state/period"].strip()


def test_period_kept():
    assert (APP / "state/period").read_text() == build(SEED)["state/period"]


def test_batches_appended_in_order():
    want = build(SEED)["ledger.csv"] + "".join(inbox_files(SEED).values())
    assert (APP / "ledger.csv").read_text() == want


def test_batches_archived_and_inbox_empty():
    folder = APP / "archive" / _period()
    got = {p.name: p.read_text() for p in folder.iterdir()}
    assert got == inbox_files(SEED)
    assert sorted(p.name for p in (APP / "archive").iterdir()) == [_period()]
    assert list((APP / "inbox").iterdir()) == []


def test_line_count():
    lines = (APP / "ledger.csv").read_text().count("\n")
    assert (APP / "state/lines").read_text().strip() == str(lines)

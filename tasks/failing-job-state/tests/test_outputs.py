import os
from pathlib import Path

from gen import expected

EXPECTED = expected(int(os.environ.get("TC_INSTANCE", "0")))


def test_state_queues_the_failed_job():
    assert Path("/app/state/scheduler.state").read_text() == EXPECTED["state/scheduler.state"]


def test_logs_and_other_files_untouched():
    for name, text in EXPECTED.items():
        assert (Path("/app") / name).read_text() == text, f"/app/{name} changed"


def test_no_files_added_to_state():
    found = sorted(p.name for p in Path("/app/state").iterdir())
    assert found == sorted(n.split("/")[1] for n in EXPECTED if n.startswith("state/"))

import json
import os
from pathlib import Path

from gen import summary

EXPECTED = summary(int(os.environ.get("TC_INSTANCE", "0")))


def test_departments():
    got = json.loads(Path("/app/departments.json").read_text())
    assert sorted(got) == sorted(EXPECTED)
    for dept, want in EXPECTED.items():
        assert got[dept]["headcount"] == want["headcount"], dept
        assert abs(float(got[dept]["avg_salary"]) - want["avg_salary"]) < 0.006, dept
        assert got[dept]["newest"] == want["newest"], dept

"""Issue #34: the warm start's demonstrations replayed for real (Docker, the traced shell, the
task's verifier) so that their observations are the commands' own output
(bench/warm_replayed.py). One horizon task's eight decoy demonstrations: same commands in the
same order, copy k at training instance k, solved and failed as the mix says, a look-around's
observation what it printed, and the files the bench keeps."""

import json
from pathlib import Path

import pytest

from termcredit.bench.decoy_demos import MIX, decoy_demos
from termcredit.bench.warm_refined import demo_commands
from termcredit.bench.warm_replayed import replayed_demos
from termcredit.harness.actions import parse_action
from termcredit.jsonl import read_jsonl
from termcredit.tasks import load_task

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def test_decoy_demos_replayed_with_real_observations(tmp_path, base_ref) -> None:
    task = load_task(REPO / "tasks" / "close-ledger-period")
    demos = decoy_demos(task)
    got = replayed_demos([(task, demos)], tmp_path, train_instances=8, obs_chars=300)
    assert [demo_commands(d) for d in got] == [demo_commands(d) for d in demos]
    assert all(d.turns[-1] == ("done", "") for d in got)
    rows = read_jsonl(tmp_path / "replayed.jsonl")
    assert [r["instance"] for r in rows] == list(range(8))
    assert [r["reward"] for r in rows] == [0.0 if broken else 1.0 for _, broken in MIX]
    # copy 0 looks around first: `ls inbox` (before the oracle's command 1, after `cd /app`)
    # shows the inbox's batch files instead of the synthetic "..."
    turns = {parse_action(a).command: obs for a, obs in got[0].turns}
    assert turns["cd /app"] == "exit code: 0"
    listing = turns["ls inbox"]
    assert listing.startswith("exit code: 0\nstdout:\n") and ".csv" in listing
    warm = json.loads((tmp_path / "warm.json").read_text())
    assert warm["demos"] == 8 and warm["solved"] == 4

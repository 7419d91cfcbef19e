"""Every producer of trial directories leaves ``graph.json`` in each one (the README: "written
into every trial directory"): `termcredit run`, `credit-audit`, `refine` (its replays), `tasks
check` and training rollouts. Each passes the application's hooks to its episodes
(``depgpo.trial_hook``); nothing is registered by importing a module, so a producer that
forgot would leave trials without it. Real Docker, real strace.

The task: audit-chain (`echo a > /app/a`, a distractor `echo unused > /tmp/x`, then the answer
from /app/a), which every producer can run: it has an oracle, and its distractor gives refine
something to drop and credit-audit something to leave out.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from termcredit.depgpo.graph import from_json
from termcredit.trainer.config import TrainConfig
from termcredit.trainer.train import Trainer

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tests/fixtures/tasks/audit-chain"
HELLO = REPO / "tasks/hello-world"
STEPS = ["echo a > /app/a", "echo unused > /tmp/x",
         "cat /app/a > /app/out.txt; echo b >> /app/out.txt"]


def tc(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=540)
    assert proc.returncode == 0, proc.stderr[-4000:]


def trial_dirs(root: Path) -> list[Path]:
    """Every trial directory under ``root`` (a trajectory file marks one)."""
    return sorted(p.parent for p in root.rglob("trajectory.json"))


def assert_every_trial_has_its_graph(root: Path, at_least: int) -> None:
    trials = trial_dirs(root)
    assert len(trials) >= at_least, trials
    for trial in trials:
        graph = from_json((trial / "graph.json").read_text())
        traj = json.loads((trial / "trajectory.json").read_text())
        commands = {d["step"] for _, d in graph.nodes(data=True) if d.get("type") == "command"}
        assert commands == {s["index"] for s in traj["steps"] if s.get("command")}, trial


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, base_ref: str) -> Path:
    """A `termcredit run` of the three steps replayed (reward 1)."""
    tmp = tmp_path_factory.mktemp("recorded")
    script = tmp / "steps.txt"
    script.write_text("\n".join(STEPS) + "\n")
    tc("run", "--task", str(TASK), "--agent", f"replay:{script}", "--out", str(tmp / "run"))
    return tmp / "run"


def test_run(recorded: Path) -> None:
    assert_every_trial_has_its_graph(recorded, 1)


def test_credit_audit(recorded: Path, tmp_path: Path) -> None:
    tc("credit-audit", str(recorded), "--out", str(tmp_path / "audit"))
    assert_every_trial_has_its_graph(tmp_path / "audit", 3)  # one without each step


def test_refine(recorded: Path, tmp_path: Path) -> None:
    tc("refine", str(recorded), "--out", str(tmp_path / "refined" / "data.jsonl"))
    assert_every_trial_has_its_graph(tmp_path / "refined", 1)  # the refined replay


def test_tasks_check(tmp_path: Path, base_ref: str) -> None:
    tc("tasks", "check", str(TASK), "--out", str(tmp_path / "check"))
    assert_every_trial_has_its_graph(tmp_path / "check", 2)  # the oracle's and nop's


def test_train_rollouts(tmp_path: Path, base_ref: str) -> None:
    cfg = TrainConfig(algo="grpo", model="micro", tasks=[str(HELLO)], group_size=2, steps=1,
                      lr=1e-2, seed=1, rollout={"max_turns": 2, "max_new_tokens": 24,
                                                "command_timeout": 10.0})
    run_dir = Trainer(cfg, tmp_path / "run").run()
    assert_every_trial_has_its_graph(run_dir / "rollouts", 2)  # the group's two episodes

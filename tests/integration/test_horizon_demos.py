"""Issue #34: the horizon tier's demonstrations run for real (Docker, the traced shell, the
task's verifier) on a held-out instance: the four solved copies of each task score 1, the
four with a breaking decoy score 0, and on each recorded trajectory the oracle estimator's
labels are the oracle's seven commands (necessary) and the decoy (breaking), nothing else."""

import subprocess
import sys
from pathlib import Path

import pytest

from termcredit.bench.decoy_demos import MIX, decoy_demos
from termcredit.bench.demos import oracle_commands
from termcredit.bench.protocol import CHOICES_TASKS, HORIZON_TASKS
from termcredit.estimators.oracle import OracleSpec, label_steps
from termcredit.tasks import load_task
from termcredit.trialdir import load_trajectory

pytestmark = [pytest.mark.docker, pytest.mark.slow]
# every task that declares decoys: the horizon tier's and the choices tier's
DECOY_TASKS = sorted(set(HORIZON_TASKS) | set(CHOICES_TASKS))
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", DECOY_TASKS)
def test_demos_score_as_designed_and_are_labelled(name: str, tmp_path, base_ref) -> None:
    task = load_task(REPO / "tasks" / name)
    spec = OracleSpec.from_metadata(task.metadata, name)
    oracle = oracle_commands(task)
    for k, (demo, (_, broken)) in enumerate(zip(decoy_demos(task), MIX)):
        cmds = [a for a, _ in demo.turns if a != "done"]
        script = tmp_path / f"demo-{k}.txt"
        script.write_text("\n".join(cmds) + "\n")
        out = tmp_path / f"run-{k}"
        proc = subprocess.run([sys.executable, "-m", "termcredit.cli", "run", "--task",
                               str(task.path), "--agent", f"replay:{script}", "--instance",
                               "1000", "--out", str(out)], capture_output=True, text=True,
                              cwd=REPO)
        assert proc.returncode in (0, 1), proc.stderr
        traj = load_trajectory(out / name / "attempt-0")
        assert traj.verifier.reward == (0.0 if broken else 1.0), (k, cmds)
        labels = label_steps(traj, spec)
        ran = [s.command.command for s in traj.steps if s.command is not None]
        assert ran == cmds
        extra = [c for c in cmds if c not in oracle]
        decoys = [i for i, c in enumerate(cmds) if c in extra][-1:] if broken else []
        assert labels["breaking"] == decoys, (k, labels)
        # every oracle command is labelled necessary where it ran cleanly; after a breaking
        # decoy, the command it broke errors and loses the label
        clean = [i for i, s in enumerate(traj.steps) if s.command is not None
                 and s.command.exit_code == 0 and cmds[i] in oracle]
        assert labels["necessary"] == clean, (k, labels)
        if not broken:
            assert len(clean) == len(oracle)

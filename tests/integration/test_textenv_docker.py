"""The text environment end to end on a built-in task: real Docker, strace and the task's
verifier. Replies are parsed, their commands run traced, an invalid reply and `done` are steps
too (in steps.jsonl as well), the verifier's reward comes back from ``close``, with DepGPO's
step weights made from the finished trajectory as an engine adapter would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from termcredit.estimators.depgpo import DepGPO
from termcredit.harness.episode import Episode, task_spec
from termcredit.harness.textenv import TextEnv
from termcredit.sandbox import SandboxPool, gc
from termcredit.tasks import load_task
from termcredit.trialdir import load_trajectory

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
WRITE = "echo 'Hello, world!' > /app/hello.txt"


def test_parse_run_done_reward(client, hello_image, run_id, tmp_path):
    task = load_task(REPO / "tasks" / "hello-world")
    pool = SandboxPool(client, run_id, ahead=0)
    trial = tmp_path / "trial"
    try:
        env = TextEnv(Episode(task, pool, task_spec(task, hello_image), trial,
                              agent="scripted", command_timeout=60), obs_chars=600)
        assert env.init() == task.instruction
        assert env.act(f"I will write the file.\n```bash\n{WRITE}\n```") == ("exit code: 0",
                                                                            False)
        assert env.act("$ cat /app/hello.txt") == ("exit code: 0\nstdout:\nHello, world!",
                                                    False)
        assert env.act("```sh\n\n```") == ("error: the code block is empty", False)
        assert env.act("done") == ("", True)
        fin = env.close(weigh=DepGPO().step_weights)
    finally:
        pool.close()
        gc(client, run_id=run_id)

    assert fin.reward == 1.0 and not fin.infra and fin.result.error is None
    traj = load_trajectory(trial)
    assert traj.termination == "done" and traj.verifier is not None
    assert traj.verifier.reward == 1.0
    assert [s.command.command if s.command else None for s in traj.steps] == [
        WRITE, "cat /app/hello.txt", None, None]
    assert [(s.invalid, s.action_key) for s in traj.steps] == [
        (False, WRITE), (False, "cat /app/hello.txt"), (True, "<invalid>"), (False, "<done>")]
    assert "/app/hello.txt" in traj.steps[0].command.accesses.written
    assert "/app/hello.txt" in traj.steps[1].command.accesses.read
    # every reply on disk as it finished, the invalid one and `done` included
    logged = [json.loads(line) for line in (trial / "steps.jsonl").read_text().splitlines()]
    assert [(d["index"], d["invalid"]) for d in logged] == [
        (0, False), (1, False), (2, True), (3, False)]
    assert logged[3]["action"] == "done" and logged[3]["action_key"] == "<done>"
    # DepGPO: the write the verifier read carries the credit; the invalid reply and `done`
    # ran nothing and are untraced
    sw = fin.weights
    assert sw.steps == (0, 1, 2, 3) and sw.credit[2:] == (None, None)
    assert sw.credit[0] > 0 and sw.relevant == frozenset({0})

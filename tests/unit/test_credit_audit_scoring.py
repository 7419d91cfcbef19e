"""credit-audit's arithmetic and job building (no Docker)."""

import json
from pathlib import Path

from termcredit.bench.credit_audit import _miss, jobs_for, result_line, score, summarise

REPO = Path(__file__).resolve().parents[2]


def step(necessary, credit):
    return {"necessary": necessary, "credit": credit}


def test_score_by_hand():
    assert score({0, 2}, {0, 2}) == (1.0, 1.0)
    assert score({0, 2}, {0, 1}) == (0.5, 0.5)
    assert score({0, 1, 2}, {1}) == (1 / 3, 1.0)
    assert score(set(), {1}) == (None, 0.0)
    assert score({1}, set()) == (0.0, None)


def test_summarise_leaves_undecided_steps_out():
    steps = [step(True, 1.0), step(False, 0.0), step(True, 0.0), step(None, 0.7),
             step(False, 0.2), step(True, None)]
    s = summarise(steps)
    assert (s["n_steps"], s["n_necessary"], s["n_credited"], s["n_both"], s["n_undecided"]) \
        == (5, 3, 2, 1, 1)
    assert s["recall"] == 1 / 3 and s["precision"] == 0.5
    assert [_miss(x) for x in steps] == [None, None, "uncredited", None, "unnecessary",
                                         "uncredited"]


def test_result_line():
    data = {"overall": summarise([step(True, 1.0), step(False, 0.5)]),
            "trajectories": [{}, {}], "skipped": [{"label": "x", "error": "e"}]}
    assert result_line(data).startswith("RESULT recall=1.000 precision=0.500 steps=2 ")
    assert result_line(data).endswith("trajectories=1 skipped=1")


def test_task_folder_gives_its_split_oracle():
    [job] = jobs_for([REPO / "tests/fixtures/tasks/audit-chain"])
    assert job.solution and job.trial_dir is None and job.label == "audit-chain/oracle"
    assert job.commands == ["echo a > /app/a", "echo unused > /tmp/x",
                            "cat /app/a > /app/out.txt; echo b >> /app/out.txt"]
    [job] = jobs_for([REPO / "tasks/region-sales-report"])
    assert len(job.commands) == 2 and job.commands[0].count("\n") == 2


def test_run_folder_gives_its_successful_trials(tmp_path):
    task = REPO / "tests/fixtures/tasks/audit-chain"
    (tmp_path / "config.toml").write_text(
        f'[run]\nagent = "replay:x"\ntasks = ["{task}"]\n')
    trials = []
    for k, (reward, agent) in enumerate([(1.0, "replay:x"), (0.0, "replay:x"),
                                         (1.0, "oracle")]):
        d = tmp_path / "audit-chain" / f"attempt-{k}"
        d.mkdir(parents=True)
        steps = [{"index": 0, "action": "echo a > /app/a",
                  "command": {"command": "echo a > /app/a", "stdout": "", "stderr": "",
                              "exit_code": 0, "duration_s": 0.1}}]
        (d / "trajectory.json").write_text(json.dumps(
            {"task": "audit-chain", "instruction": "", "agent": agent, "steps": steps}))
        trials.append({"task": "audit-chain", "reward": reward, "trial_dir": str(d),
                       "error": None, "attempt": k})
    (tmp_path / "result.json").write_text(json.dumps({"trials": trials}))
    jobs = jobs_for([tmp_path])
    assert [j.label for j in jobs] == ["audit-chain/attempt-0", "audit-chain/oracle"]
    assert jobs[0].commands == ["echo a > /app/a"]
    assert jobs[0].trial_dir == tmp_path / "audit-chain" / "attempt-0"
    assert len(jobs[1].commands) == 3 and jobs[1].solution

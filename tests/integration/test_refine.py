"""`termcredit refine` and the bench's refined warm start through the real sandbox, tracer and
verifier: a recorded trial with distractors loses exactly the distractors, and the refined
trajectory replays to reward 1 in a fresh sandbox."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from rich.console import Console

from termcredit.bench.protocol import _warm, bench_config
from termcredit.trainer.sft import load_sft_jsonl

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]

# chain-answer: the most expensive item of /app/data.csv into /app/answer.txt. Steps 0, 4, 5
# and 6 are distractors (a look around, a stray write, a variable nobody expands, a read whose
# text nobody uses); 1 makes the directory 2 moves into, and 3 and 7 resolve relative paths
# there: the answer needs all four.
COMMANDS = [
    "find /app -maxdepth 2 -type f",
    "mkdir -p /app/work",
    "cd /app/work",
    "sort -t, -k2 -n /app/data.csv > sorted.csv",
    "echo checking > /tmp/debug.log",
    "note=unused",
    "cat /app/notes.txt",
    "tail -n 1 sorted.csv | cut -d, -f1 > /app/answer.txt",
]
DISTRACTORS = [0, 4, 5, 6]


def tc(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "termcredit.cli", *args], capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_refine_drops_exactly_the_distractors_and_the_replay_scores_1(tmp_path, base_ref):
    script = tmp_path / "cmds.txt"
    script.write_text("\n".join(COMMANDS) + "\n")
    tc("run", "--task", str(REPO / "tests/fixtures/tasks/chain-answer"), "--agent",
       f"replay:{script}", "--out", str(tmp_path / "run"))
    assert json.loads((tmp_path / "run" / "result.json").read_text())["mean_reward"] == 1.0
    out = tmp_path / "refined" / "data.jsonl"
    stdout = tc("refine", str(tmp_path / "run"), "--out", str(out))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert [d["step"] for d in row["steps_dropped"]] == DISTRACTORS
    assert [d["command"] for d in row["steps_dropped"]] == [COMMANDS[i] for i in DISTRACTORS]
    assert [d["step"] for d in row["steps_kept"]] == [1, 2, 3, 7]
    assert row["replay_reward"] == 1.0
    replay_result = json.loads((Path(row["replay"]) / "result.json").read_text())
    assert replay_result["reward"] == 1.0 and replay_result["n_steps"] == 4
    assert row["token_unit"] in ("tiny", "chars") and row["tokens_saved"] > 0
    assert row["tokens_saved"] == row["tokens_before"] - row["tokens_after"]
    # the chat: the kept commands, each with what the replay printed (nothing), then done
    kept = [COMMANDS[i] for i in (1, 2, 3, 7)]
    assert [m["role"] for m in row["messages"]] == (["system", "user"]
                                                    + ["assistant", "user"] * 4 + ["assistant"])
    assert [m["content"] for m in row["messages"][2::2]] == kept + ["done"]
    assert [m["content"] for m in row["messages"][3::2]] == ["exit code: 0"] * 4
    demos = load_sft_jsonl(out)
    assert [a for a, _ in demos[0].turns] == kept + ["done"]
    report = json.loads(out.with_name("data.jsonl.report.json").read_text())
    assert (report["trials_in"], report["kept"], report["rejected"]) == (1, 1, 0)
    assert "RESULT refine trials_seen=1 successful=1 kept=1 rejected=0 steps_dropped=4" in stdout


def test_bench_refined_warm_start_on_the_micro_tier(tmp_path, base_ref):
    # hello-world's noisy mix (demos.MIX): 4 x [solve, distractor], 1 x [look, solve,
    # distractor], 3 wrong chains (fail). Distinct successes: 2; both refine to [solve]
    # (1 + 2 steps dropped); weighted by their copies: 4 + 1 = 5 demonstrations.
    cfg = bench_config("micro", warm_demos="refined", algos=["grpo"])
    start, teacher = _warm(cfg, tmp_path, Console(stderr=True))
    assert teacher is None and Path(start, "config.json").is_file()
    warm = json.loads((tmp_path / "start" / "refine" / "warm.json").read_text())
    assert (warm["noisy_demos"], warm["successful"], warm["refined"],
            warm["refined_demos"], warm["steps_dropped"]) == (8, 2, 2, 5, 3)
    assert json.loads((tmp_path / "start" / "sft.json").read_text())["demos"] == 5
    for demo in load_sft_jsonl(tmp_path / "start" / "refine" / "refined.jsonl"):
        assert [a for a, _ in demo.turns] == ["echo 'Hello, world!' > /app/hello.txt", "done"]


def test_bench_warm_compare_measures_both_starts(tmp_path, base_ref):
    """--warm-compare: the refined start is built and evaluated on the same held-out slots as
    the noisy one; training goes on from start/ only; the report has the table."""
    from termcredit.bench.protocol import run_bench

    cfg = bench_config("micro", algos=["grpo"], warm_compare=True)
    out = run_bench(cfg, tmp_path / "bench", console=Console(stderr=True))
    slots = [[(e["task"], e["instance"], e["sample"]) for e in map(json.loads, (
        out / d / "eval-seed-0.jsonl").read_text().splitlines())]
        for d in ("start", "start-refined")]
    assert slots[0] == slots[1] and len(slots[0]) == 2
    assert json.loads((out / "start-refined" / "sft.json").read_text())["demos"] == 5
    assert not (out / "start" / "refine").exists()
    assert tomllib.loads((out / "grpo" / "seed-0" / "config.toml").read_text())["model"] == \
        str(out / "start")
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["warm_start"]["rows"]) == {"noisy", "refined"}
    assert "## Warm start: noisy vs refined demonstrations" in (out / "REPORT.md").read_text()


def test_train_warm_starts_on_a_chat_jsonl(tmp_path, base_ref):
    import torch

    from termcredit.trainer.config import load_config
    from termcredit.trainer.policy import load_policy
    from termcredit.trainer.sft import Demo, demo_messages
    from termcredit.trainer.train import Trainer

    data = tmp_path / "sft.jsonl"
    solve = "echo 'Hello, world!' > /app/hello.txt"
    data.write_text("".join(json.dumps({"messages": demo_messages(Demo(i, [(solve, "exit code: 0"),
                                                                            ("done", "")]))}) + "\n"
                            for i in ("Say hello.", "Write hello.")))
    cfg = load_config(None, {"model": "micro", "tasks": [str(REPO / "tasks/hello-world")],
                             "steps": 1, "sft_data": str(data), "sft_steps": 3})
    trainer = Trainer(cfg, tmp_path / "run")
    try:
        fresh = load_policy("micro").model.state_dict()
        trained = trainer.policy.model.state_dict()
        assert any(not torch.equal(fresh[k], trained[k]) for k in fresh)
    finally:
        trainer.close()
    sft = json.loads((tmp_path / "run" / "sft.json").read_text())
    assert (sft["demos"], sft["steps"]) == (2, 3)


def test_train_config_names_a_missing_sft_file(tmp_path):
    from termcredit.trainer.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="field 'sft_data'"):
        load_config(None, {"sft_data": str(tmp_path / "none.jsonl")})

"""End to end: EpisodeFacts -> step weights; and the speed budget for 50 commands."""

from __future__ import annotations

import math

import pytest
from depgpo_testutil import cmd, episode, untraced, worked_example

from termcredit.depgpo import DepGPOConfig, analyse, depgpo_step_weights, from_json, to_json


def test_worked_example_step_weights():
    sw = depgpo_step_weights(worked_example())
    assert sw.steps == (0, 1, 2)
    assert sw.credit == (0.75, 1.0, 1.0)
    assert sw.f == pytest.approx((0.0, 1.5, 1.5)) and sw.w == pytest.approx((0.0, 1.5, 1.5))
    assert sw.fallback is None and sw.relevant == {1, 2}
    assert sw.classes == (("supporting-read",), ("indirect-write",), ("direct-write",))


def test_no_subtract_min_config():
    sw = depgpo_step_weights(worked_example(), DepGPOConfig(subtract_min=False))
    assert sw.f == pytest.approx((3 * 0.75 / 2.75, 3 / 2.75, 3 / 2.75))


def test_untraced_steps_and_token_counts():
    facts = worked_example()
    facts.commands[0].n_tokens, facts.commands[1].n_tokens = 10, 20
    facts.commands[2].n_tokens = 30
    facts.commands.append(untraced(3, n_tokens=40))
    sw = depgpo_step_weights(facts)
    assert sw.credit[3] is None and sw.f[3] == 1.0 and sw.classes[3] == ("untraced",)
    total = sum(sw.n_tokens)
    assert math.isclose(sum(n * w for n, w in zip(sw.n_tokens, sw.w)), total)


def test_fallback_reasons_end_to_end():
    no_res = worked_example()
    no_res.resources = []
    assert depgpo_step_weights(no_res).fallback == "no-verifier-resources"
    tied = episode(cmd(0, write={"/a": "1\n"}), cmd(1, write={"/b": "1\n"}), resources=["/c"])
    assert depgpo_step_weights(tied).fallback == "tied-credits"
    only_untraced = episode(untraced(0), resources=["/c"])
    sw = depgpo_step_weights(only_untraced)
    assert sw.fallback == "no-traced-steps" and sw.w == (1.0,)


def test_several_commands_in_one_step_are_summed():
    facts = episode(cmd(0, "echo 42 > a", write={"/app/a": "42\n"}),
                    cmd(0, "echo 43 > b", write={"/app/b": "43\n"}),
                    cmd(1, "ls", listed=["/app"]), resources=["/app/a", "/app/b"])
    sw = depgpo_step_weights(facts)
    assert sw.steps == (0, 1) and sw.credit == (2.0, 0.0)


def test_graph_annotated_and_serialisable():
    a = analyse(worked_example())
    g = from_json(to_json(a.graph.graph))
    assert [g.nodes[f"cmd:{i}"]["credit"] for i in range(3)] == [0.75, 1.0, 1.0]
    assert g.nodes["cmd:0"]["weight"] == 0.0


# ---------------------------------------------------------------- speed
def synthetic(n: int = 50) -> object:
    """A busy 50-command episode: data reads with values in stdout, staging files of 30
    lines, appends, in-place edits, renames, listings, distractor logs, a final answer."""
    cmds = []
    data = "\n".join(f"row_{i},{i * 37 % 1000},{i * 7919 % 10007}" for i in range(40)) + "\n"
    stage: dict[str, str] = {}
    for i in range(n):
        k = i % 10
        path = f"/app/work/stage_{i % 5}.csv"
        if k == 0:
            cmds.append(cmd(i, "cat /app/data.csv", read=["/app/data.csv"], stdout=data))
        elif k == 1:
            cmds.append(cmd(i, "ls -la /app/work", listed=["/app/work"],
                            stdout="total 8\n" + "\n".join(f"-rw-r--r-- 1 root root {100 + j} "
                                                           f"Dec 10 12:0{j} stage_{j}.csv"
                                                           for j in range(5))))
        elif k in (2, 3):
            text = "\n".join(f"row_{j},{(j * i) % 97}" for j in range(30)) + "\n"
            stage[path] = text
            cmds.append(cmd(i, f"python3 transform.py row_{i} > {path}", read=["/app/data.csv"],
                            write={path: text}, stdout=f"wrote {path} checksum {i * 12345}\n"))
        elif k == 4 and path in stage:
            text = stage[path] + f"extra_{i}\n"
            stage[path] = text
            cmds.append(cmd(i, f"echo extra_{i} >> {path}", read=[path], write={path: text},
                            derived={path: path}))
        elif k == 5 and path in stage:
            text = stage[path].replace("row_3,", "ROW_3,")
            stage[path] = text
            cmds.append(cmd(i, f"sed -i s/row_3/ROW_3/ {path}", read=[path], write={path: text},
                            derived={path: path}))
        elif k == 6:
            cmds.append(cmd(i, f"echo step {i} >> /tmp/debug.log", read=["/tmp/debug.log"],
                            write={"/tmp/debug.log": "".join(f"step {j}\n" for j in range(i + 1))},
                            derived={"/tmp/debug.log": "/tmp/debug.log"}))
        elif k == 7 and stage:
            src = sorted(stage)[0]
            cmds.append(cmd(i, f"python3 summarize.py {src} {i * 12345}", read=sorted(stage),
                            write={f"/app/work/summary_{i}.txt": f"total {i * 12345}\nrows 30\n"},
                            stdout=f"summary {i * 12345}\n"))
        elif k == 8:
            tmp = f"/tmp/draft_{i}"
            cmds.append(cmd(i, f"grep ROW_3 /app/work/*.csv > {tmp} && mv {tmp} /app/answer.txt",
                            read=sorted(stage), write={"/app/answer.txt": f"ROW_3 {i}\n"},
                            derived={"/app/answer.txt": tmp}, deleted=[tmp]))
        else:
            cmds.append(cmd(i, "cat /app/answer.txt", read=["/app/answer.txt"],
                            stdout=f"ROW_3 {i - 1}\n"))
    return episode(*cmds, resources=["/app/answer.txt", "/app/work"],
                   instruction="Transform /app/data.csv and write the answer to /app/answer.txt.")


def test_fifty_command_episode_keeps_the_token_weighted_mean():
    """The synthetic 50-command episode (timed in benchmarks/credit_speed.py) analyses fully."""
    res = analyse(synthetic())
    w, n = res.weights.w, res.weights.n_tokens
    assert len(w) == 50 and res.weights.fallback is None
    assert abs(sum(a * b for a, b in zip(w, n)) / sum(n) - 1.0) < 1e-9
    assert any(c == 0 for c in res.weights.credit) and max(res.weights.credit) > 0

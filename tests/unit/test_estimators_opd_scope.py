"""OPD's ``scope`` (all | relevant | first-error) on hand-built traced trajectories; every
expected per-token advantage is worked out by hand below.

Layout: one prompt token, then per step ONE sampled token and one observation token (mask 0,
log-probs that must not leak). Step k's sampled token has log π_old = −(k+1) and teacher
log-prob −0.5, so with κ = 1 its OPD advantage is −(−(k+1) + 0.5) = k + 0.5:
step advantages under scope "all" = [0.5, 1.5, 2.5, 3.5].

Chain (verifier reads /app/answer.txt):
  0 cat /app/input.txt (stdout 90417, reused by 1) | 1 echo 90417 > /tmp/stage.txt
  | 2 cat /etc/hostname (nothing uses it) | 3 sed /tmp/stage.txt > /app/answer.txt
DepGPO credit (β 0.5): [0.75, 1, 0, 1] -> "relevant" keeps steps 0, 1, 3.
"first-error" in a failed copy: the only step whose own output the verifier read is 3.
"""

from __future__ import annotations

import hashlib
import math

import pytest

from termcredit import estimators
from termcredit.estimators import parse_spec
from termcredit.records import (CommandRecord, FileState, Step, TokenLayout, Trajectory,
                                VerifierReport)
from termcredit.tracer import AccessSummary

INSTRUCTION = "Find the code in /app/input.txt and write it to /app/answer.txt."


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def step(i: int, command: str, *, read: tuple[str, ...] = (), write: dict[str, str] | None = None,
         stdout: str = "", append: bool = False) -> Step:
    write = write or {}
    files = [FileState(path=p, kind="file", size=len(t), sha256=_sha(t), text=True, content=t)
             for p, t in write.items()]
    acc = AccessSummary(read=set(read) | (set(write) if append else set()), written=set(write),
                        derived_from={p: p for p in write} if append else {})
    rec = CommandRecord(command=command, stdout=stdout, stderr="", exit_code=0, duration_s=0.0,
                        seq=i, accesses=acc, files=files)
    return Step(index=i, action=command, command=rec)


def layout(n_steps: int) -> TokenLayout:
    ids, mask, old, teacher, spans = [0], [0], [-9.0], [-1.0], []
    for k in range(n_steps):
        spans.append([len(ids), len(ids) + 1])
        ids += [1, 2]
        mask += [1, 0]
        old += [-(k + 1.0), -7.0]
        teacher += [-0.5, -3.0]
    return TokenLayout(token_ids=ids, loss_mask=mask, logprobs=old, step_spans=spans,
                       teacher_logprobs=teacher)


def traj(reward: float, steps: list[Step]) -> Trajectory:
    return Trajectory(task="t", instruction=INSTRUCTION, agent="x", steps=steps,
                      verifier=VerifierReport(reward=reward, resources=["/app/answer.txt"]),
                      tokens=layout(len(steps)))


def chain(reward: float) -> Trajectory:
    return traj(reward, [
        step(0, "cat /app/input.txt", read=("/app/input.txt",), stdout="secret_code=90417\n"),
        step(1, "echo 90417 > /tmp/stage.txt", write={"/tmp/stage.txt": "90417\n"}),
        step(2, "cat /etc/hostname", read=("/etc/hostname",), stdout="box\n"),
        step(3, "sed 's/^/answer: /' /tmp/stage.txt > /app/answer.txt", read=("/tmp/stage.txt",),
             write={"/app/answer.txt": "answer: 90417\n"})])


def tokens(per_step: list[float]) -> list[float]:
    """Per-token advantages: 0 on the prompt and on each observation token."""
    out = [0.0]
    for v in per_step:
        out += [v, 0.0]
    return out


def close(a: list[float], b: list[float], tol: float = 1e-5) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=tol) for x, y in zip(a, b))


def test_scope_all_is_plain_opd() -> None:
    out = estimators.build("opd", scope="all")([chain(1.0)])
    assert close(out.advantages[0], tokens([0.5, 1.5, 2.5, 3.5]))


def test_scope_relevant_keeps_the_dependency_path() -> None:
    out = estimators.build("opd", scope="relevant")([chain(1.0), chain(0.0)])
    # credit [0.75, 1, 0, 1]: the hostname read (step 2) is off the path, in both outcomes
    assert close(out.advantages[0], tokens([0.5, 1.5, 0.0, 3.5]))
    assert close(out.advantages[1], tokens([0.5, 1.5, 0.0, 3.5]))
    assert out.stats["relevant_none"] == 0.0


def test_scope_first_error_only_the_rejected_output_of_a_failure() -> None:
    out = estimators.build("opd", scope="first-error")([chain(1.0), chain(0.0)])
    assert close(out.advantages[0], tokens([0.0, 0.0, 0.0, 0.0]))  # success: no error
    # failure: 0 and 1 only fed the answer (indirect), 3 wrote what the verifier read
    assert close(out.advantages[1], tokens([0.0, 0.0, 0.0, 3.5]))
    assert out.stats["first_error_none"] == pytest.approx(0.5)


def test_first_error_is_the_earliest_step_whose_lines_the_verifier_read() -> None:
    # 0 writes "alpha", 1 appends "beta" (both lines in the final answer: both read by the
    # verifier), 2 looks around: the earliest is step 0
    appended = traj(0.0, [
        step(0, "echo alpha > /app/answer.txt", write={"/app/answer.txt": "alpha\n"}),
        step(1, "echo beta >> /app/answer.txt", write={"/app/answer.txt": "alpha\nbeta\n"},
             append=True),
        step(2, "cat /etc/hostname", read=("/etc/hostname",), stdout="box\n")])
    # 0 writes "alpha", 1 overwrites the file with "beta": 0's output is gone, 1's was read
    overwritten = traj(0.0, [
        step(0, "echo alpha > /app/answer.txt", write={"/app/answer.txt": "alpha\n"}),
        step(1, "echo beta > /app/answer.txt", write={"/app/answer.txt": "beta\n"}),
        step(2, "cat /etc/hostname", read=("/etc/hostname",), stdout="box\n")])
    # the answer went to the wrong file: the verifier read nothing any step wrote
    elsewhere = traj(0.0, [
        step(0, "echo alpha > /tmp/out.txt", write={"/tmp/out.txt": "alpha\n"})])
    out = estimators.build("opd", scope="first-error")([appended, overwritten, elsewhere])
    assert close(out.advantages[0], tokens([0.5, 0.0, 0.0]))
    assert close(out.advantages[1], tokens([0.0, 1.5, 0.0]))
    assert close(out.advantages[2], tokens([0.0]))
    assert out.stats["first_error_none"] == pytest.approx(1 / 3)


def test_scoped_opd_composes_with_depgpo() -> None:
    # rewards [1, 0]: Â = ±0.5/(0.5 + 1e-6) ≈ ±1. DepGPO weights of the chain (one token per
    # step): credit [0.75, 1, 0, 1], min 0, Σ 2.75, K 4 -> f = [12/11, 16/11, 0, 16/11];
    # Σn = 4 = Σ n·f, so w = f. OPD first-error adds 3.5 on the failure's step 3 only.
    name, settings = parse_spec("depgpo+opd[scope=first-error]")
    assert (name, settings) == ("depgpo+opd", {"scope": "first-error"})
    est = estimators.build(name, **settings)
    assert est.needs == frozenset({estimators.TEACHER_LOGPROBS})
    out = est([chain(1.0), chain(0.0)])
    a = 0.5 / (0.5 + 1e-6)
    w = [12 / 11, 16 / 11, 0.0, 16 / 11]
    assert close(out.advantages[0], tokens([a * x for x in w]))
    assert close(out.advantages[1], tokens([-a * w[0], -a * w[1], 0.0, -a * w[3] + 3.5]))
    assert out.stats["opd/first_error_none"] == pytest.approx(0.5)


def test_unknown_scope_is_an_error_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="all, relevant, first-error"):
        parse_spec("opd[scope=everywhere]")

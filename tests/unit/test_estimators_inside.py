"""Blame inside a failed command (``inside``, issue #34), every expected value by hand.

Tokens (id: text): 1 "cd", 2 " /app", 3 "sed", 4 " 's", 5 "/a/b/'", 6 " f", 7 "<|im_end|>",
8 "rm", 9 " -l". A step's span is its sampled tokens; one observation token (id 0, mask 0)
follows each step.
"""

from __future__ import annotations

import math

from termcredit import estimators
from termcredit.depgpo import StepWeights
from termcredit.estimators.inside import (blame_inside, clean_commands, fault_at, kept_tokens,
                                          token_text)
from termcredit.estimators.oracle import INFO_KEY, OracleSpec
from termcredit.records import CommandRecord, Step, TokenLayout, Trajectory, VerifierReport
from termcredit.trainer.providers import OracleSteps, TokenText

VOCAB = {0: "\n", 1: "cd", 2: " /app", 3: "sed", 4: " 's", 5: "/a/b/'", 6: " f",
         7: "<|im_end|>", 8: "rm", 9: " -l"}
SED = "sed 's/a/b/' f"
REFS = ["cd /app", SED]


def decode(ids: list[int]) -> str:
    return "".join(VOCAB[i] for i in ids)


def traj(reward: float, steps: list[tuple[list[int], str, int]]) -> Trajectory:
    """Steps as (token ids, command, exit code); the action text is the decoded ids."""
    ids, mask, spans, recs = [0], [0], [], []
    for i, (toks, command, code) in enumerate(steps):
        spans.append([len(ids), len(ids) + len(toks)])
        ids += toks + [0]
        mask += [1] * len(toks) + [0]
        rec = CommandRecord(command=command, stdout="", stderr="", exit_code=code,
                            duration_s=0.0, seq=i)
        recs.append(Step(index=i, action=decode(toks), command=rec))
    tok = TokenLayout(token_ids=ids, loss_mask=mask, logprobs=[0.0] * len(ids), step_spans=spans)
    t = Trajectory(task="t", instruction="", agent="x", steps=recs,
                   verifier=VerifierReport(reward=reward), tokens=tok)
    TokenText(decode)([t])
    return t


def test_fault_at_by_hand() -> None:
    assert fault_at("sed 's", REFS) == 6  # cut short: a prefix of SED, fault at its end
    assert fault_at("sed 's/a/c/' f", REFS) == 9  # "sed 's/a/" shared, then c against b
    assert fault_at("cd /app", REFS) is None  # well-formed: blamed whole
    assert fault_at("rm -l f", REFS) is None  # nothing shared: the choice is at fault
    assert fault_at("cd /ap", ["cd /a", "cd /apple"]) == 6  # the longest shared prefix wins


def test_token_text_and_kept_tokens() -> None:
    t = traj(0.0, [([1, 2, 7], "cd /app", 0), ([3, 4, 7], "sed 's", 2)])
    assert token_text([3, 4, 7], decode) == {"text": "sed 's<|im_end|>", "ends": [3, 6, 16]}
    # fault at 6 (the end of "sed 's"): "sed" (ends 3) and " 's" (ends 6) are well formed
    assert kept_tokens(t, 1, 6) == [False, False, True]
    # fault at 4 (inside " 's", which ends at 6): that token and later keep the blame
    assert kept_tokens(t, 1, 4) == [False, True, True]
    t.info.pop("token_text")
    assert kept_tokens(t, 1, 6) is None


def test_blame_inside_narrows_only_errored_steps() -> None:
    t = traj(0.0, [([1, 2, 7], "cd /app", 0), ([3, 4, 7], "sed 's", 2)])
    # per token: [prompt, cd, /app, end, obs, sed, 's, end, obs]
    adv = [0.0, -1.0, -1.0, -1.0, 0.0, -2.0, -2.0, -2.0, 0.0]
    out, n = blame_inside(t, adv, [0, 1], REFS)
    assert n == 1  # step 0 ran cleanly: it is not narrowed
    assert out == [0.0, -1.0, -1.0, -1.0, 0.0, 0.0, 0.0, -2.0, 0.0]
    wrong = traj(0.0, [([8, 9, 7], "rm -l", 1)])
    out, n = blame_inside(wrong, [0.0, -1.0, -1.0, -1.0, 0.0], [0], REFS)
    assert (out, n) == ([0.0, -1.0, -1.0, -1.0, 0.0], 0)  # no shared start: blamed whole


def oracle_group() -> list[Trajectory]:
    spec = OracleSpec.from_metadata({"oracle": {"necessary": ["^cd ", "^sed "]}}, "t",
                                    references=REFS)
    a = traj(1.0, [([1, 2, 7], "cd /app", 0), ([3, 4, 5, 6, 7], SED, 0)])
    b = traj(0.0, [([1, 2, 7], "cd /app", 0), ([3, 4, 7], "sed 's", 2)])
    OracleSteps({"t": spec})(g := [a, b])
    return g


def test_oracle_inside_by_hand() -> None:
    # rewards [1, 0]: Â = [+1, −1] (population std 0.5; eps 1e-6 makes it 0.999998).
    # B's blame: credits [0, 1] (the errored sed) -> f = [0, 2]; tokens [3, 3], Σn = 6,
    # Σ n·f = 6 -> w = [0, 2]: per token [0, 0, 0 | −2, −2, −2]. Inside: "sed 's" is a prefix
    # of SED, fault at 6 -> only <|im_end|> keeps −2.
    g = oracle_group()
    assert g[1].info[INFO_KEY]["references"] == REFS
    plain = estimators.build("oracle")(g).advantages[1]
    est = estimators.build("oracle", inside=True)
    assert est.needs == {"oracle_steps", "token_text"}
    out = est(g)
    a = 0.5 / (0.5 + 1e-6)  # |Â|
    want_plain = [0.0, 0.0, 0.0, 0.0, 0.0, -2 * a, -2 * a, -2 * a, 0.0]
    want = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -2 * a, 0.0]
    assert all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(plain, want_plain)), plain
    assert all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(out.advantages[1], want))
    assert out.advantages[0] == estimators.build("oracle")(g).advantages[0]  # solved: as is
    assert out.stats["inside_narrowed"] == 1.0


def _weights(w: tuple[float, ...]) -> StepWeights:
    k = len(w)
    return StepWeights(tuple(range(k)), (None,) * k, w, w, (3,) * k, ((),) * k, None,
                       frozenset())


def test_depgpo_inside_measures_against_the_groups_clean_commands(monkeypatch) -> None:
    # Â = [+1, −1]; negative=errors puts B's blame on its errored step: w = [0, 2]. The
    # references are the commands that ran cleanly in the group: "cd /app" and SED (from A).
    a = traj(1.0, [([1, 2, 7], "cd /app", 0), ([3, 4, 5, 6, 7], SED, 0)])
    b = traj(0.0, [([1, 2, 7], "cd /app", 0), ([3, 4, 7], "sed 's", 2)])
    assert clean_commands([a, b]) == {"cd /app", SED}
    est = estimators.build("depgpo", negative="errors", inside=True)
    assert est.needs == {"token_text"}
    given = {0: _weights((1.0, 1.0)), 1: _weights((1.0, 1.0))}
    monkeypatch.setattr(est, "step_weights", lambda t: given[[a, b].index(t)])
    out = est([a, b])
    k = 0.5 / (0.5 + 1e-6)  # |Â|
    want = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -2 * k, 0.0]
    assert all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(out.advantages[1], want)), out
    # without a solved copy of the command in the group, nothing to measure against: whole
    alone = estimators.build("depgpo", negative="errors", inside=True)
    monkeypatch.setattr(alone, "step_weights", lambda t: _weights((1.0,) * len(t.steps)))
    c = traj(1.0, [([1, 2, 7], "cd /app", 0)])
    got = alone([c, b]).advantages[1]
    assert all(math.isclose(x, y, abs_tol=1e-9)
               for x, y in zip(got, [0.0, 0.0, 0.0, 0.0, 0.0, -2 * k, -2 * k, -2 * k, 0.0]))

"""TRL's own GRPOTrainer trains the tiny policy for two steps on hello-world, with termcredit
rollouts (real sandboxes, real verifier) and our estimators' per-token advantages."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
import torch

from trl import GRPOConfig

from termcredit import estimators
from termcredit.integrations.base import HarnessEnvs
from termcredit.integrations.trl import TermcreditGRPOTrainer, TermcreditRollout, task_dataset
from termcredit.tasks import load_task
from termcredit.trainer.chat import ChatLayout
from termcredit.trainer.policy import Sample, load_policy

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
GOOD = "echo 'Hello, world!' > /app/hello.txt"
BAD = "echo 'Hello' > /app/hello.txt"


def scripted(tokenizer, end_id: int, scripts: list[list[str]]):
    """A sampler in which row k of a batch says scripts[k][turn] (every row lives as many
    turns, so a row keeps its place): the group's outcomes are fixed, and its advantages can be
    worked out by hand. The ids are the tokenizer's own, ending with the end-of-turn id, as a
    sampled reply's would."""
    def factory(_trainer):
        turn = [0]

        def sample(prompts, _n, _temp):
            out = []
            for k in range(len(prompts)):
                ids = tokenizer.encode(scripts[k][turn[0]]) + [end_id]
                out.append(Sample(ids, [-1.0] * len(ids), True))
            turn[0] += 1
            return out
        return sample
    return factory


def run_trl(tmp_path: Path, estimator: str, sampler=None, steps: int = 2, max_turns: int = 2):
    policy = load_policy("tiny")
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    task = load_task(REPO / "tasks" / "hello-world")
    envs = HarnessEnvs(run_id=f"pytest-trl-{secrets.token_hex(3)}", max_turns=max_turns,
                       command_timeout=30.0)
    kw = {"sampler": sampler} if sampler else {}
    rollout = TermcreditRollout([task], envs, tmp_path / "rollouts", max_new_tokens=8, **kw)
    args = GRPOConfig(output_dir=str(tmp_path / "trl"), use_cpu=True, bf16=False,
                      per_device_train_batch_size=4, num_generations=4, max_steps=steps,
                      learning_rate=1e-2, report_to=[], save_strategy="no", logging_steps=1,
                      seed=0, dataloader_num_workers=0)
    trainer = TermcreditGRPOTrainer(model=policy.model, processing_class=policy.tokenizer,
                                    args=args, train_dataset=task_dataset([task]),
                                    rollout=rollout, estimator=estimator)
    try:
        trainer.train()
    finally:
        envs.close()
    changed = any(not torch.equal(before[k], v) for k, v in policy.model.state_dict().items())
    return trainer, rollout, changed


def test_depgpo_advantages_reach_trls_loss(tmp_path):
    """Two solve ([ls, the right echo, done]), two fail (a wrong echo): R = 1, 1, 0, 0, so
    Â = ±0.5 / (0.5 + 1e-6). DepGPO: `ls` reaches nothing the verifier reads (credit 0), the
    echo writes /app/hello.txt (credit > 0), `done` is untraced: f = (0, 2, 1) (K = 2 traced
    steps, min subtracted; untraced weight 1), w_t = f_t · Σn / Σ n f. Each action's tokens get
    Â · w_t, each observation's 0. TRL's own advantage would be ±0.5/(std + 1e-4) on every
    token (0.866 with its N-1 std)."""
    tok = load_policy("tiny").tokenizer
    rows = [["ls /app", GOOD, "done"]] * 2 + [["ls /app", BAD, "done"]] * 2
    sampler = scripted(tok, ChatLayout(tok).end_id, rows)
    trainer, rollout, changed = run_trl(tmp_path, "depgpo", sampler, max_turns=3)
    assert changed  # TRL's optimizer moved the weights
    assert [t.verifier.reward for t in rollout.last] == [1.0, 1.0, 0.0, 0.0]
    assert len(trainer.used_advantages) == 2  # one generation batch per step
    a_hat = 0.5 / (0.5 + 1e-6)
    adv = trainer.used_advantages[-1]
    for k, (row, traj) in enumerate(zip(rows, rollout.last)):
        n = [len(tok.encode(text)) + 1 for text in row]  # the reply's ids and its end id
        f = [0.0, 2.0, 1.0]
        w = [x * sum(n) / sum(a * b for a, b in zip(n, f)) for x in f]
        sign = 1.0 if k < 2 else -1.0
        expected = torch.zeros(adv.shape[1])
        p = rollout.last_prompt_lens[k]
        for (a, b), n_t, w_t in zip(traj.tokens.step_spans, n, w):
            assert b - a == n_t
            expected[a - p:b - p] = sign * a_hat * w_t
        assert torch.allclose(adv[k], expected, atol=1e-5), (k, adv[k], expected)


def test_policy_samples_and_gigpo_advantages_are_used(tmp_path):
    """The default sampler: the tiny model TRL trains writes the replies. Whatever it wrote,
    the advantages TRL used are GiGPO's of the recorded group, on the completion tokens."""
    trainer, rollout, _changed = run_trl(tmp_path, "gigpo", steps=1, max_turns=1)
    trajs, lens = rollout.last, rollout.last_prompt_lens
    assert len(trajs) == 4 and all(t.verifier is not None for t in trajs)
    ours = estimators.build("gigpo")(trajs).advantages
    adv = trainer.used_advantages[-1]
    for k, t in enumerate(trajs):
        tail = torch.tensor(ours[k][lens[k]:])
        assert torch.allclose(adv[k, :len(tail)], tail)
        assert not adv[k, len(tail):].any()
        mask = torch.tensor(t.tokens.loss_mask[lens[k]:])
        assert not adv[k, :len(tail)][mask == 0].any()

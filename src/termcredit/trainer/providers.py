"""Inputs the estimator needs beyond the rollout records, filled by the trainer before it runs.

Estimators declare their needs (``estimators.NEEDS`` keys, e.g. ``"teacher_logprobs"``); the
trainer looks each one up in ``PROVIDERS`` when it is built, so a missing teacher fails before
any rollout, and it never asks which algorithm it trains. A provider is made once per run and
then called on every group that trains.
"""

from __future__ import annotations

from typing import Callable, Iterable, Protocol

from ..estimators import ORACLE_STEPS, TEACHER_LOGPROBS, TOKEN_TEXT
from ..estimators.inside import token_text
from ..estimators.oracle import INFO_KEY, OracleSpec, label_steps
from ..records import Trajectory
from ..tasks import Task, find_tasks
from ..tasks.demos import reference_commands
from .config import TrainConfig
from .policy import Policy, check_same_tokenizer, load_policy


class Provider(Protocol):
    def __call__(self, group: list[Trajectory]) -> None: ...


class TeacherLogprobs:
    """Scores the student's sampled ids with the teacher, in the student's context, into
    ``TokenLayout.teacher_logprobs`` (before the trajectory is written, so its file has them)."""

    def __init__(self, teacher: Policy):
        self.teacher = teacher

    def __call__(self, group: list[Trajectory]) -> None:
        for t in group:
            tok = t.tokens
            tok.teacher_logprobs = self.teacher.score([tok.token_ids], [tok.loss_mask])[0]


def _teacher_logprobs(cfg: TrainConfig, student: Policy) -> Provider:
    if not cfg.teacher:
        raise ValueError(f"algo {cfg.algo!r} needs teacher log-probs: give a teacher policy "
                         "with the student's tokenizer (--teacher)")
    teacher = load_policy(cfg.teacher, device=cfg.device)
    check_same_tokenizer(student, teacher, cfg.model, cfg.teacher)
    return TeacherLogprobs(teacher)


class OracleSteps:
    """Labels each trajectory's steps with its task's declared ground truth
    (``Trajectory.info["oracle"]``: the necessary and the breaking steps), for `oracle`."""

    def __init__(self, specs: dict[str, OracleSpec]):
        self.specs = specs

    def __call__(self, group: list[Trajectory]) -> None:
        for t in group:
            t.info[INFO_KEY] = label_steps(t, self.specs[t.task])


def _oracle_steps(cfg: TrainConfig, student: Policy) -> Provider:
    # every training task must declare its ground truth: a task without fails before rollouts
    return OracleSteps({t.name: OracleSpec.from_metadata(t.metadata, str(t.path / "task.toml"),
                                                         reference_commands(t))
                        for t in find_tasks(cfg.tasks)})


class TokenText:
    """Each step's decoded tokens and where each token ends in that text
    (``Trajectory.info["token_text"]``), for blame inside a command (estimators/inside.py)."""

    def __init__(self, decode: Callable[[list[int]], str]):
        self.decode = decode

    def __call__(self, group: list[Trajectory]) -> None:
        for t in group:
            if t.tokens is not None:
                ids = t.tokens.token_ids
                t.info[TOKEN_TEXT] = [token_text(ids[a:b], self.decode)
                                      for a, b in t.tokens.step_spans]


def _token_text(cfg: TrainConfig, student: Policy) -> Provider:
    tok = student.tokenizer
    return TokenText(lambda ids: tok.decode(ids, skip_special_tokens=False))


# need -> how to make its provider from the run's config and the student policy
PROVIDERS: dict[str, Callable[[TrainConfig, Policy], Provider]] = {
    TEACHER_LOGPROBS: _teacher_logprobs,
    ORACLE_STEPS: _oracle_steps,
    TOKEN_TEXT: _token_text,
}


def providers_for(needs: Iterable[str], cfg: TrainConfig, student: Policy) -> list[Provider]:
    """One provider per need, in a fixed order; a ValueError for a need nothing provides or
    whose provider cannot be made from this config."""
    needs = sorted(set(needs))
    missing = [n for n in needs if n not in PROVIDERS]
    if missing:
        raise ValueError(f"algo {cfg.algo!r} needs {', '.join(missing)}, which the trainer "
                         f"cannot provide (it provides {', '.join(sorted(PROVIDERS))})")
    return [PROVIDERS[n](cfg, student) for n in needs]

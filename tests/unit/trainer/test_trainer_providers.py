"""Issue #15: an estimator declares what it needs beyond the rollouts; the trainer provides it
(a teacher's log-probs) or refuses to start, without ever testing the algorithm's name."""

from __future__ import annotations

import tempfile
from pathlib import Path

from types import SimpleNamespace

import pytest

from termcredit import estimators
from termcredit.records import Step, TokenLayout, Trajectory, VerifierReport
from termcredit.trainer import providers
from termcredit.trainer.config import TrainConfig
from termcredit.trainer.providers import providers_for


def traj(trial_dir: str | None = None, reward: float = 1.0) -> Trajectory:
    tok = TokenLayout(token_ids=[1, 2, 3], loss_mask=[0, 1, 1], logprobs=[0.0, -1.0, -1.0],
                      step_spans=[[1, 3]])
    return Trajectory(task="t", instruction="", agent="policy", tokens=tok,
                      steps=[Step(index=0, action="true")], trial_dir=trial_dir,
                      verifier=VerifierReport(reward=reward))


class Teacher:
    def __init__(self) -> None:
        self.calls: list[tuple[list, list]] = []

    def score(self, seqs, masks):
        self.calls.append((seqs, masks))
        return [[-0.25 * m for m in mask] for mask in masks]


@pytest.fixture
def distil(monkeypatch: pytest.MonkeyPatch) -> str:
    """A throwaway estimator, named like no real one, that needs the teacher's log-probs."""
    monkeypatch.setattr(estimators, "REGISTRY", dict(estimators.REGISTRY))

    @estimators.register("distil15")
    class Distil:
        needs = frozenset({estimators.TEACHER_LOGPROBS})

        def __call__(self, group):
            return estimators.EstimatorResult(advantages=[[0.0] * 3 for _ in group])

    return "distil15+grpo"


def test_a_declared_need_is_refused_without_a_teacher(distil: str) -> None:
    est = estimators.build(distil)
    assert est.needs == estimators.needs(distil) == {"teacher_logprobs"}
    with pytest.raises(ValueError, match=r"^algo 'distil15\+grpo' needs teacher log-probs: "
                                         r"give a teacher policy .*\(--teacher\)$"):
        providers_for(est.needs, TrainConfig(algo=distil), student=None)


def test_a_declared_need_loads_checks_and_scores_the_teacher(
        distil: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    teacher, loaded, checked = Teacher(), [], []
    monkeypatch.setattr(providers, "load_policy",
                        lambda src, device: loaded.append((src, device)) or teacher)
    monkeypatch.setattr(providers, "check_same_tokenizer", lambda *a: checked.append(a))
    student = object()
    cfg = TrainConfig(algo=distil, teacher="clean-sft", model="micro")
    (provide,) = providers_for(estimators.build(distil).needs, cfg, student)
    assert loaded == [("clean-sft", "cpu")]
    assert checked == [(student, teacher, "micro", "clean-sft")]
    group = [traj(str(tmp_path))]
    provide(group)
    assert teacher.calls == [([[1, 2, 3]], [[0, 1, 1]])]
    assert group[0].tokens.teacher_logprobs == [0.0, -0.25, -0.25]


@pytest.mark.parametrize(("spec", "teacher"), [
    ("depgpo+opd", True), ("opd", True), ("gigpo + opd", True),
    ("grpo", False), ("depgpo", False), ("gigpo+adastep", False),
])
def test_real_specs_reach_the_teacher_only_when_they_distil(
        spec: str, teacher: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "load_policy", lambda src, device: Teacher())
    monkeypatch.setattr(providers, "check_same_tokenizer", lambda *a: None)
    assert (estimators.TEACHER_LOGPROBS in estimators.needs(spec)) is teacher
    built = providers_for(estimators.build(spec).needs, TrainConfig(algo=spec, teacher="t"), None)
    assert [type(p) for p in built] == ([providers.TeacherLogprobs] if teacher else [])
    if teacher:  # and without one, refused
        with pytest.raises(ValueError, match="--teacher"):
            providers_for(estimators.build(spec).needs, TrainConfig(algo=spec), None)
    else:  # a teacher nobody needs is not even loaded
        monkeypatch.setattr(providers, "load_policy", lambda *a, **k: pytest.fail("loaded"))
        assert providers_for(estimators.build(spec).needs, TrainConfig(algo=spec), None) == []


def test_a_need_without_a_provider_is_refused_naming_it() -> None:
    # (a config names a registered estimator: TrainConfig checks its spec when it is made)
    with pytest.raises(ValueError, match=r"^algo 'grpo' needs critic_values, which the trainer "
                                         r"cannot provide \(it provides oracle_steps, "
                                         r"teacher_logprobs, token_text\)$"):
        providers_for({"critic_values"}, TrainConfig(algo="grpo"), None)


def test_an_estimator_cannot_declare_an_unknown_need(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(estimators, "REGISTRY", dict(estimators.REGISTRY))
    with pytest.raises(ValueError, match=r"needs unknown input\(s\) \['critic_values'\]"):
        @estimators.register("critic15")
        class Critic:
            needs = frozenset({"critic_values"})
    assert "critic15" not in estimators.REGISTRY


def test_train_step_runs_every_provider_before_the_episodes_are_written_and_estimated(
        ) -> None:
    from termcredit.trainer.train import Trainer

    seen: list[str] = []
    group = [traj(reward=1.0), traj(reward=0.0)]

    def rollout(*_a, before_finish=None, **_kw):  # the episodes call it before writing
        assert before_finish is not None
        before_finish(group)
        seen.append("written")
        return group

    tr = Trainer.__new__(Trainer)  # no sandbox, no policy: rollout and update are stubs
    tr.cfg = TrainConfig()
    tr.tasks = [SimpleNamespace(name="t", parametrized=False, path=Path("tasks/t"))]
    tr.run_dir, tr.image = Path(tempfile.mkdtemp(prefix="tc-stub-trainer-")), lambda t, i: "img"
    tr.rollout = rollout
    tr.update = lambda g, adv: {}
    tr.providers = [lambda g: seen.append(f"provided {len(g)}")]
    grpo = estimators.build("grpo")
    tr.estimator = lambda g: seen.append("estimated") or grpo(g)
    tr.train_step(0)
    assert seen == ["provided 2", "written", "estimated"]

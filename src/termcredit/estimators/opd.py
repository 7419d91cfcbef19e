"""On-policy distillation: per sampled token
A_t = −κ · (log π_old(y_t) − log π_teacher(y_t)), the sampled-token reverse KL to the teacher,
with π_old the plain policy's (``TokenLayout.old_logprobs`` when sampling was tempered or
top-p truncated, else the behaviour log-probs, which then are the same),
optionally discounted-summed backwards within each step (γ_kl > 0). The teacher is any policy
with the same tokenizer; its log-probs are a declared need (``needs``), so the caller (the
trainer) fills TokenLayout.teacher_logprobs on the exact ids the student sampled, in the
student's context, before this runs. Composes with RL estimators by `+` (depgpo+opd).
"""

from __future__ import annotations

from . import TEACHER_LOGPROBS, EstimatorResult, register
from .group import Group


@register("opd")
class OPD:
    needs: frozenset[str] = frozenset({TEACHER_LOGPROBS})

    def __init__(self, kappa: float = 1.0, gamma_kl: float = 0.0):
        self.kappa, self.gamma_kl = kappa, gamma_kl

    def __call__(self, group: Group) -> EstimatorResult:
        advs, missing = [], 0
        for traj in group:
            tok = traj.tokens
            if tok is None or not tok.teacher_logprobs:
                missing += 1
                advs.append([0.0] * (len(tok.token_ids) if tok else len(traj.steps)))
                continue
            adv = [-self.kappa * (old - teach) if m else 0.0
                   for old, teach, m in zip(tok.old_logprobs or tok.logprobs,
                                            tok.teacher_logprobs, tok.loss_mask)]
            if self.gamma_kl > 0:
                for a, b in tok.step_spans:
                    acc = 0.0
                    for i in range(b - 1, a - 1, -1):
                        if tok.loss_mask[i]:
                            acc = adv[i] + self.gamma_kl * acc
                            adv[i] = acc
            advs.append(adv)
        return EstimatorResult(advantages=advs,
                               stats={"missing_teacher": missing / len(group) if group else 0.0})

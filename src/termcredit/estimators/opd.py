"""On-policy distillation: per sampled token
A_t = −κ · (log π_old(y_t) − log π_teacher(y_t)), the sampled-token reverse KL to the teacher,
with π_old the plain policy's (``TokenLayout.old_logprobs`` when sampling was tempered or
top-p truncated, else the behaviour log-probs, which then are the same),
optionally discounted-summed backwards within each step (γ_kl > 0). The teacher is any policy
with the same tokenizer; its log-probs are a declared need (``needs``), so the caller (the
trainer) fills TokenLayout.teacher_logprobs on the exact ids the student sampled, in the
student's context, before this runs. Composes with RL estimators by `+` (depgpo+opd).

``scope`` aims the teacher term by provenance (the dependency graph of ``depgpo/``, built from
what each command really read and wrote; no critic model). Steps outside the scope get 0:

* ``"all"`` (default): every step.
* ``"relevant"``: steps on a dependency path to what the verifier read, i.e. DepGPO credit
  > 0 (direct and indirect writers, supporting reads, the `cd`/shell variables they used).
  Steps that ran no command (`done`, invalid replies) have no credit and are left out.
* ``"first-error"``: only in a *failed* trajectory (reward < 1), only the earliest step whose
  own output the verifier read and rejected: a command whose lines sit in the final version
  of a verifier-inspected path (direct records), or whose lasting resource effect is on such
  a path (a mkdir/symlink/edit of the path itself, a deletion or chmod the verifier saw).
  Upstream steps that only fed that output (indirect writers, supporting reads) are not the
  rejected output. A successful trajectory, or a failed one whose verifier read nothing any
  step wrote (the answer never made), gets no teacher term (stat ``first_error_none``).
"""

from __future__ import annotations

from ..depgpo.analysis import analysis_of
from ..records import Trajectory
from . import TEACHER_LOGPROBS, EstimatorResult, register
from .group import Group
from .rewards import reward_of

SCOPES = ("all", "relevant", "first-error")


def scope_steps(traj: Trajectory, scope: str) -> list[bool] | None:
    """Per step of ``traj`` (by position): whether the teacher term applies; None: every step
    (scope "all")."""
    if scope == "all":
        return None
    n = len(traj.steps)
    if scope == "first-error" and reward_of(traj) >= 1.0:
        return [False] * n
    res = analysis_of(traj)  # DepGPO's default settings, the trajectory's one analysis
    deps, cr = res.graph, res.credit
    if scope == "relevant":
        return [c is not None and c > 0 for c in cr.credit]
    keep = [False] * n
    for c in range(n):
        seen_by_verifier = (cr.n_direct[c] > 0
                            or any(to is None for _, _, to in cr.deps[c])
                            or (c in cr.relevant and any(
                                rw.path in deps.resources for rw in deps.effects[c].resources)))
        if seen_by_verifier:
            keep[c] = True
            break
    return keep


@register("opd")
class OPD:
    needs: frozenset[str] = frozenset({TEACHER_LOGPROBS})

    def __init__(self, kappa: float = 1.0, gamma_kl: float = 0.0, scope: str = "all"):
        if scope not in SCOPES:
            raise ValueError(f"opd scope: one of {', '.join(SCOPES)}, not {scope!r}")
        self.kappa, self.gamma_kl, self.scope = kappa, gamma_kl, scope

    def __call__(self, group: Group) -> EstimatorResult:
        advs, missing, none_in_scope = [], 0, 0
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
            keep = scope_steps(traj, self.scope)
            if keep is not None:
                none_in_scope += not any(keep)
                inside = [False] * len(adv)
                for on, (a, b) in zip(keep, tok.step_spans):
                    if on:
                        inside[a:b] = [True] * (b - a)
                adv = [x if ok else 0.0 for x, ok in zip(adv, inside)]
            advs.append(adv)
        n = len(group)
        stats = {"missing_teacher": missing / n if n else 0.0}
        if self.scope != "all":
            key = "first_error_none" if self.scope == "first-error" else "relevant_none"
            stats[key] = none_in_scope / n if n else 0.0
        return EstimatorResult(advantages=advs, stats=stats)

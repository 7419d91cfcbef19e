"""Blame inside a failed command: of a command that errored, only the tokens from where it
left every well-formed command on, not its well-formed prefix.

Why (issue #34): on the horizon tier the tiny policy's errored commands are mostly right
commands cut short or spliced (``sed "s``, ``mv in/users.txt``, ``sed "s/@PORT@/$PORT/"
tempmpl``). Blaming the whole command pushes down its right prefix (``sed``, ``"s``) as
hard as the token that went wrong; per-step blame on errored commands cost the oracle
0.12 final success against spreading the failure uniformly (docs/credit-tier.md).

The rule, per errored step of a failed trajectory that carries blame: take the reference
commands (``references``), find the one the command follows longest (the longest common
prefix, in characters); the fault starts at the first character after that prefix, or at
the command's end when the command is a proper prefix of a reference (cut short: the token
that ended it is at fault). The step's tokens that end at or before that character get no
blame; the token holding it and every later token of the step keep the step's blame
unchanged (nothing is re-normalised: the blame the prefix loses is dropped, not moved). A
command equal to a reference, or with no reference sharing its first character, is blamed
whole, as before: its fault is the choice, not its spelling.

Where the characters of a step's tokens are: ``Trajectory.info[TOKEN_TEXT]``, one entry per
step, ``{"text": decoded step tokens, "ends": [end offset of each token in text]}``, filled
by the trainer from the policy's tokenizer (the ``token_text`` need).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..records import Step, Trajectory
from . import TOKEN_TEXT  # the Trajectory.info key is the need's name


def errored(step: Step) -> bool:
    """A command that exited non-zero or timed out (what the bench's rates count as errored)."""
    cmd = step.command
    return cmd is not None and (cmd.exit_code != 0 or cmd.timed_out)


def ran_cleanly(step: Step) -> bool:
    """A command that exited 0 and did not time out."""
    return step.command is not None and not errored(step)


def errored_steps(traj: Trajectory) -> set[int]:
    """The indices of ``traj``'s steps whose command errored."""
    return {s.index for s in traj.steps if errored(s)}


def final_done(traj: Trajectory) -> set[int]:
    """The `done` that ended the trajectory ({its index}; empty when a turn or token budget, or
    an action that failed to parse, ended it): where an omission's blame goes (``omission =
    "done"``)."""
    last = traj.steps[-1] if traj.steps else None
    return {last.index} if last is not None and last.command is None and not last.invalid else set()


def clean_commands(group: Iterable[Trajectory]) -> set[str]:
    """The commands that ran cleanly anywhere in ``group``: the references DepGPO blames
    inside against, what the policy itself got right."""
    return {s.command.command for t in group for s in t.steps if ran_cleanly(s)}


def fault_at(command: str, references: Iterable[str]) -> int | None:
    """The character of ``command`` where its fault starts (see the module doc); None when
    it is to be blamed whole (equal to a reference, or no reference shares its start)."""
    best = 0
    for ref in references:
        if ref == command:
            return None
        n = 0
        for a, b in zip(command, ref):
            if a != b:
                break
            n += 1
        best = max(best, n)
    return best if best > 0 else None


def token_text(ids: Sequence[int], decode) -> dict[str, object]:
    """``{"text", "ends"}`` of one step's token ids: ``ends[k]`` is the length of the first
    k + 1 tokens decoded together (so multi-byte characters split across tokens count where
    they complete)."""
    ends = [len(decode(list(ids[:k + 1]))) for k in range(len(ids))]
    return {"text": decode(list(ids)), "ends": ends}


def kept_tokens(traj: Trajectory, position: int, fault: int) -> list[bool] | None:
    """Per token of the step at ``position`` (in ``traj.steps``): whether it keeps its blame,
    given its command's fault at character ``fault``; None when the step's token text is
    missing or does not hold the command (then the step is blamed whole)."""
    texts = traj.info.get(TOKEN_TEXT)
    step = traj.steps[position]
    if not isinstance(texts, list) or position >= len(texts) or step.command is None:
        return None
    entry = texts[position]
    at = entry["text"].find(step.command.command)
    if at < 0:
        return None
    cut = at + fault
    return [end > cut for end in entry["ends"]]


def blame_inside(traj: Trajectory, advantages: list[float], blamed: Sequence[int],
                 references: Iterable[str]) -> tuple[list[float], int]:
    """``advantages`` (per token, as ``broadcast`` made them) with the well-formed prefix of
    each errored step in ``blamed`` (positions in ``traj.steps``) set to 0; and how many
    steps were narrowed. A trajectory without tokens is returned as it is."""
    if traj.tokens is None:
        return advantages, 0
    refs = list(references)
    out, narrowed = list(advantages), 0
    for pos in blamed:
        step = traj.steps[pos]
        if not errored(step):
            continue
        fault = fault_at(step.command.command, refs)
        keep = None if fault is None else kept_tokens(traj, pos, fault)
        a, b = traj.tokens.step_spans[pos]
        if keep is None or len(keep) != b - a:
            continue
        for i, k in zip(range(a, b), keep):
            if not k:
                out[i] = 0.0
        narrowed += 1
    return out, narrowed


def narrow_failed(group: Sequence[Trajectory], adv_hat: Sequence[float],
                  per_step: Sequence[Sequence[float]], advantages: list[list[float]],
                  references: Sequence[Iterable[str]]) -> tuple[list[list[float]], float]:
    """Each failed trajectory's (Â < 0) per-token advantages narrowed inside its errored
    steps that carry blame (``blame_inside`` against that trajectory's ``references``); and
    the share of those steps that were narrowed (0.0 when there were none)."""
    out, narrowed, candidates = [], 0, 0
    for traj, a, steps, adv, refs in zip(group, adv_hat, per_step, advantages, references):
        if a >= 0:
            out.append(adv)
            continue
        blamed = [p for p, v in enumerate(steps) if v != 0 and errored(traj.steps[p])]
        new, n = blame_inside(traj, adv, blamed, refs)
        out.append(new)
        narrowed, candidates = narrowed + n, candidates + len(blamed)
    return out, (narrowed / candidates if candidates else 0.0)

"""Which steps of a successful trajectory did not contribute, *proven* from the dependency graph.

A step is dropped only when every one of these holds (``decide``), on the graph DepGPO builds
(the trajectory's one analysis, ``depgpo.analysis.analysis_of``, never re-derived here):

1. it ran a traced command (an invalid reply ran nothing and is always dropped; a command
   whose trace is missing proves nothing and is kept);
2. DepGPO credit 0 (nothing it did reached what the verifier read), unless ``min_credit``
   keeps it anyway;
3. no command-level edge to a later command that stays: none read a record or resource it
   wrote, reused a value of its stdout (stdout-reuse), resolved relative paths in the cwd its
   `cd` set, or expanded a shell name it set (``Dependencies.succ``);
4. every file it changed is unobserved: no later command that stays touched the path or anything under
   it (read, wrote, deleted, listed its directory, probed it, ran it), the verifier neither
   read it, nor read anything under it, nor listed its directory; a lasting deletion or
   metadata change of a path is always kept (the environment lost or changed something);
   with ``keep_writes`` a file write that still exists at the end is kept too;
5. no write outside the task layer (the environment: /usr, /etc/..., not caches);
6. no shell state a later command could use invisibly: exports, functions, aliases and
   options (a child process reads its environment without the command line naming it), a
   variable set or unset whose name a later command line uses, the shell's own exit;
7. it started no background job (a server a later command talks to is no file);
8. with ``keep_reads``: not a look-around whose stdout holds a value the next command's text
   contains (the agent wrote the next command having seen it).

Anything else the graph cannot see (a sleep's timing, network peers) is what the replay of the
refined trajectory is for: it is kept only if the verifier still passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..depgpo import CreditResult, DepGPOConfig, Dependencies, analyse
from ..depgpo.analysis import analysis_of
from ..depgpo.facts import CommandFacts, EpisodeFacts
from ..depgpo.shellvars import shell_uses
from ..depgpo.stdout_reuse import extract_values, text_tokens
from ..records import Trajectory
from ..shellsyntax import backgrounds
from ..tracer.summary import DEFAULT_ENV_GLOBS, AccessSets, _contains

INVISIBLE_SHELL_KINDS = ("export", "function", "alias", "option")
_SCRATCH_ENV = ("/proc", "/sys", "/dev")  # kernel views: writing there changes no file


@dataclass(frozen=True)
class RefineOptions:
    keep_reads: bool = False  # keep look-arounds whose output the next command's text uses
    min_credit: float | None = None  # keep every step with at least this credit
    keep_writes: bool = False  # keep every step whose file writes last to the end
    depgpo: DepGPOConfig = DepGPOConfig()


@dataclass(frozen=True)
class StepDecision:
    step: int  # position in the trajectory's steps
    command: str | None  # None: the step ran no command
    keep: bool
    why: str  # the first reason it is kept, or why dropping it is safe
    credit: float | None = None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _parent(path: str) -> str:
    return path.rstrip("/").rpartition("/")[0] or "/"


def _paths(acc: AccessSets) -> set[str]:
    return (acc.read | acc.written | acc.deleted | acc.temporary | acc.executed | acc.listed
            | acc.probed | acc.meta | acc.statted | set(acc.derived_from.values()))


def _env_write(acc: AccessSets) -> str | None:
    env = getattr(acc, "environment", None)
    if env is None:
        return None
    for p in sorted(env.written | env.deleted | env.meta):
        if not _contains(_SCRATCH_ENV, DEFAULT_ENV_GLOBS, p):
            return p
    return None


def _file_reason(p: str, later: list[tuple[int, AccessSets]], facts: EpisodeFacts) -> str | None:
    """Why a change of ``p`` is observed (None: nobody looked)."""
    for j, acc in later:
        if any(_under(q, p) for q in _paths(acc)) or _parent(p) in acc.listed:
            return f"step {j} touches {p}"
    if any(_under(q, p) for q in facts.resources):
        return f"the verifier read {p}"
    if p in facts.listed or _parent(p) in facts.listed:
        return f"the verifier listed {_parent(p)}"
    return None


def decide(traj: Trajectory, facts: EpisodeFacts | None = None,
           opts: RefineOptions = RefineOptions()) -> list[StepDecision]:
    """Keep or drop, per step of ``traj``, from its analysis under ``opts.depgpo``; ``facts``:
    other facts of it to decide from (None: its own, ``facts_from_trajectory(traj)``)."""
    res = analysis_of(traj, opts.depgpo) if facts is None else analyse(facts, opts.depgpo)
    facts, deps, cr = res.facts, res.graph, res.credit
    assert facts is not None
    cmds = facts.commands
    n = len(cmds)
    out: list[StepDecision] = []
    kept: set[int] = set()  # later commands that stay (decided first: edges only go forward)
    for c in reversed(range(n)):
        d = _decide_one(c, traj, facts, deps, cr, kept, opts)
        if d.keep and d.command is not None:
            kept.add(c)
        out.append(d)
    return out[::-1]


def _decide_one(c: int, traj: Trajectory, facts: EpisodeFacts, deps: Dependencies,
                cr: CreditResult, kept: set[int], opts: RefineOptions) -> StepDecision:
    """One step, given which later commands stay: an edge into a dropped step is no use."""
    step, cf, cmds = traj.steps[c], facts.commands[c], facts.commands
    text = step.command.command if step.command is not None else None

    def keep(why: str) -> StepDecision:
        return StepDecision(c, text, True, why, cr.credit[c])

    if step.command is None:
        return (keep("done") if not step.invalid else
                StepDecision(c, None, False, "ran nothing (invalid action)"))
    if not cf.traced:
        return keep("untraced: nothing can be proven")
    credit = cr.credit[c] or 0.0
    if opts.min_credit is not None and credit >= opts.min_credit:
        return keep(f"credit {credit:.3g} >= --min-credit {opts.min_credit:g}")
    if credit > 0:
        return keep(f"credit {credit:.3g}: {', '.join(cr.classes[c])}")
    fed = sorted(deps.succ[c] & kept)
    if fed:
        kinds = []
        for j in fed:
            k = ("stdout reused" if c in deps.sources[j] else "cwd" if c in deps.cwd_from[j]
                 else "shell name" if deps.shell_from and c in deps.shell_from[j]
                 else "reads its write")
            kinds.append(f"step {cmds[j].index} ({k})")
        return keep("feeds " + ", ".join(kinds))
    after = [cmds[j] for j in sorted(kept) if j > c]
    blind = [a.index for a in after if not a.traced]
    if blind:
        return keep(f"step {blind[0]} ran untraced: what it used is unknown")
    reason = _kept_effect(c, deps, facts, after, opts)
    if reason is None:
        reason = _kept_shell(cf, after)
    if reason is None and backgrounds(cf.command):
        reason = "starts a background job"
    if reason is None and opts.keep_reads:
        reason = _look_around(cf, after, opts)
    return keep(reason) if reason else StepDecision(
        c, text, False, "no kept command and not the verifier used anything it did", credit)


def _kept_effect(c: int, deps: Dependencies, facts: EpisodeFacts, after: list[CommandFacts],
                 opts: RefineOptions) -> str | None:
    eff = deps.effects[c]
    later = [(a.index, a.accesses) for a in after]
    for rw in eff.resources:
        if rw.kind == "delete":
            return f"deletes {rw.path}"
        if rw.kind == "meta":
            return f"changes the metadata of {rw.path}"
    for p in sorted(eff.written_paths):
        why = _file_reason(p, later, facts)
        if why:
            return why
        v = deps.tracker.current.get(p)
        if opts.keep_writes and v is not None and v.live and v.writer == c:
            return f"its write of {p} lasts (--keep-writes)"
    env = _env_write(facts.commands[c].accesses)
    if env:
        return f"writes the environment ({env})"
    return None


def _kept_shell(cf: CommandFacts, after: list[CommandFacts]) -> str | None:
    if not after:
        return None  # nothing ran after it: its shell state reached no command
    if cf.shell_reset:
        return "ends the shell (later commands ran in a new one)"
    used: set[str] = set()
    for a in after:
        uses = shell_uses(a.command)
        used |= uses.variables | {f"{k}:{n}" for n in uses.commands for k in ("fn", "alias")}
    for name, value in sorted(cf.shell_set.items()):
        kind = value.partition(":")[0]
        if kind in INVISIBLE_SHELL_KINDS:
            return f"sets shell {kind} {name} (a later command may use it unseen)"
        if name in used:
            return f"changes shell name {name}, which a later command uses"
    return None


def _look_around(cf: CommandFacts, after: list[CommandFacts], opts: RefineOptions) -> str | None:
    nxt = after[0] if after else None
    if nxt is None or cf.exit_code != 0 or not cf.stdout:
        return None
    shared = extract_values(cf.stdout, opts.depgpo.reuse) & text_tokens(nxt.command)
    if shared:
        return f"look-around: step {nxt.index} uses {', '.join(sorted(shared)[:3])} (--keep-reads)"
    return None


def refined_commands(decisions: list[StepDecision]) -> list[str]:
    """The commands a refined trajectory replays: the kept steps' commands, in order."""
    return [d.command for d in decisions if d.keep and d.command is not None]

"""DepGPO's dependencies built while the episode runs, so its weights are ready at the end.

``dependencies`` (and ``build_graph``, which draws them for ``graph.json``) walks every
command of a finished episode (ownership of file versions and lines, stdout reuse, cwd and
shell-state links): most of DepGPO's cost per trajectory. A ``GraphBuilder`` takes the
commands in order, so a step hook (``feed``, which the application passes to each ``Episode``
in its ``Hooks``) feeds each step's facts to one kept with the trajectory
(``Trajectory.live``) as soon as the step is recorded, in the background of the next
generation. After verification only the walk back from the verifier's resources is left
(``deps_for``).

The facts of a step can still change after it was fed: the end-of-episode pass gives a
background job's late writes to the command that started it and drops reads of paths that did
not exist. Each fed step keeps a fingerprint of everything the builder read; ``deps_for``
compares them with the finished facts and, where any step changed, builds the dependencies
anew from all the facts (a builder cannot take a step back), so the result is always
``build_graph`` of the final facts. The graph is drawn as the steps come, so ``graph.json``
needs no second pass over the episode (``analysis.py``).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..records import Trajectory
from ..tracer import AccessSets
from ..trialdir import TrialPaths
from .facts import CommandFacts, EpisodeFacts
from .graph import DepGraph, GraphBuilder, build_graph, cmd_node
from .load import command_facts, recorded_cwd
from .stdout_reuse import ReuseConfig

KEY = "depgpo.dependencies"
_SETS = tuple(f.name for f in fields(AccessSets) if f.name != "derived_from")


def fingerprint(cmd: CommandFacts) -> tuple[Any, ...]:
    """Everything of a command's facts that ``DepBuilder.add`` reads, as a value."""
    acc = cmd.accesses
    return (
        cmd.index, cmd.command, cmd.traced, cmd.exit_code, cmd.stdout,
        tuple(frozenset(getattr(acc, name)) for name in _SETS),
        tuple(sorted(acc.derived_from.items())),
        tuple(sorted((p, f.kind, f.size, f.sha256, f.mode, f.target, f.text)
                     for p, f in cmd.after.items())),
        cmd.cwd_before, cmd.cwd_after, frozenset(cmd.cwd_used),
        tuple(sorted(cmd.shell_set.items())), cmd.shell_reset,
    )


class LiveDependencies:
    """One episode's GraphBuilder, fed a step at a time (DepGPO's default settings)."""

    diff_rewrites = "if-read"
    reuse = ReuseConfig()

    def __init__(self, instruction: str) -> None:
        self.instruction = instruction
        self.builder = GraphBuilder(instruction, diff_rewrites=self.diff_rewrites,
                                    reuse=self.reuse)
        self.prints: list[tuple[Any, ...]] = []
        self.rebuilt = False  # the last result was built anew (facts changed, other settings)

    def catch_up(self, traj: Trajectory) -> None:
        """Feed the steps recorded since the last call (cwd from the step's trace record)."""
        paths = TrialPaths(traj.trial_dir) if traj.trial_dir else None
        for step in traj.steps[len(self.prints):]:
            cmd = command_facts(step, 1, paths, recorded_cwd(step.command))
            self.prints.append(fingerprint(cmd))
            self.builder.add(cmd)

    def result(self, facts: EpisodeFacts, diff_rewrites: str | bool,
               reuse: ReuseConfig) -> DepGraph:
        """``build_graph(facts, ...)``, from what was fed where the facts are unchanged."""
        if (diff_rewrites == self.diff_rewrites and reuse == self.reuse
                and len(facts.commands) >= len(self.prints)
                and all(p == fingerprint(c) for p, c in zip(self.prints, facts.commands))):
            for cmd in facts.commands[len(self.prints):]:
                self.prints.append(fingerprint(cmd))
                self.builder.add(cmd)
            self.rebuilt = False
            # steps were fed before their tokens were counted (the fingerprint leaves them
            # out: dependencies never read them); the drawing shows the final counts
            for c, cmd in enumerate(facts.commands):
                self.builder.graph.nodes[cmd_node(c)]["n_tokens"] = cmd.n_tokens
            return self.builder.result(facts.resources, facts.listed)
        self.rebuilt = True
        return build_graph(facts, diff_rewrites=diff_rewrites, reuse=reuse)


def deps_for(traj: Trajectory, facts: EpisodeFacts, *, diff_rewrites: str | bool = "if-read",
             reuse: ReuseConfig = ReuseConfig()) -> DepGraph:
    """The dependencies of ``traj`` (whose facts are ``facts``) and their graph: the live
    builder's where the episode kept one, else built now."""
    live = traj.live.get(KEY)
    if isinstance(live, LiveDependencies) and live.instruction == facts.instruction:
        return live.result(facts, diff_rewrites, reuse)
    return build_graph(facts, diff_rewrites=diff_rewrites, reuse=reuse)


def feed(traj: Trajectory) -> None:
    """The step hook: the steps recorded since the last call into the episode's builder."""
    live = traj.live.get(KEY)
    if not isinstance(live, LiveDependencies):
        live = traj.live[KEY] = LiveDependencies(traj.instruction)
    live.catch_up(traj)

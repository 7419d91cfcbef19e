"""The data contract between stages: small dataclasses with a JSON round trip.

Raw strace text travels in ``CommandRecord.trace`` in memory but is written to ``trace/`` files,
not into the trajectory file (traces are large; JSON stays readable).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .rawtext import json_dumps
from .tracer import AccessSets, AccessSummary

T = TypeVar("T")


@dataclass
class CommandRecord:
    """One command run in the traced shell."""

    command: str
    stdout: str
    stderr: str
    exit_code: int
    duration_s: float
    timed_out: bool = False
    output_truncated: bool = False
    trace_dropped: int = 0  # bytes of this step's trace cut out (head and tail kept)
    shell_restarted: bool = False  # the command ended the shell (exit, killed builtin loop)
    seq: int = 0
    trace: str = ""  # raw strace lines from start marker to end marker (not serialised)
    trace_file: str | None = None  # relative to the trial dir, once written
    # what the command did to task files, the tracer's summary as is (environment layer
    # apart, in ``accesses.environment``); None: not traced
    accesses: AccessSummary | None = None
    files: list["FileState"] = field(default_factory=list)  # content check after the command
    end_token: str = ""  # the secret of this command's end marker (markers without it are forged)
    integrity: list[str] = field(default_factory=list)  # tampering seen in this step's trace
    # what the command changed in the shell's own state: name -> "kind:digest" (kind var,
    # export, array, function, alias, option) or "unset:"; None: not reported
    shell: dict[str, str] | None = None
    cwd: str | None = None  # the shell's working directory after the command (None: unknown)
    # the working directories the trace saw (set with the accesses, from the whole session);
    # None: not recorded (an older trajectory: DepGPO parses the session trace instead)
    trace_cwd: "TraceCwd | None" = None
    files_dropped: int = 0  # written paths past the per-step snapshot cap: not in ``files``


@dataclass
class TraceCwd:
    """The shell's working directory around one command, from the session trace."""

    before: str | None = None  # None: unknown
    after: str | None = None
    used: list[str] = field(default_factory=list)  # cwds its processes resolved paths in


@dataclass
class FileState:
    """A path's state right after a command (the content check): hash, and text if small."""

    path: str
    kind: str  # file | dir | symlink | missing | other | unreadable
    size: int = 0
    sha256: str | None = None
    mode: int | None = None
    target: str | None = None  # symlink target
    text: bool = False  # content is UTF-8 text (kept in `content` when within the cap)
    content: str | None = None
    # the hash covers the size and the first allocated bytes only (a file past the shim's hash
    # cap, e.g. a huge sparse one): equal hashes mean "probably unchanged", not "identical"
    partial: bool = False


@dataclass
class Step:
    """One agent turn: what the agent proposed and what running it did."""

    index: int
    action: str  # the raw action text (for a policy: its decoded output)
    command: CommandRecord | None = None  # None for an invalid action or the `done` action
    observation: str = ""  # what the agent was shown after it
    info: dict[str, Any] = field(default_factory=dict)
    anchor_obs: str = ""  # raw observation BEFORE the action, no history/template (GiGPO)
    action_key: str = ""  # canonical action (normalised command) (AdaStep)
    invalid: bool = False  # the action could not be parsed into a command
    reward: float = 0.0  # per-step env reward (terminal tasks: 0; penalties for invalid)


@dataclass
class VerifierReport:
    reward: float
    rewards: dict[str, float] = field(default_factory=dict)  # reward.json metrics, if any
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    trace_file: str | None = None
    error: str | None = None
    resources: list[str] = field(default_factory=list)  # cleaned verifier-inspected paths
    # provenance audit: toolchain files the verifier ran or loaded that an agent process made
    suspect: bool = False
    suspect_files: list[dict[str, str]] = field(default_factory=list)  # {"path", "reason"}
    tampering: list[str] = field(default_factory=list)  # agent writes during verification
    on_suspect: str | None = None  # the task's [verifier] on_suspect (None: caller's default)
    notes: list[str] = field(default_factory=list)  # verifier logs skipped or cut when copied
    # where the verifier's interpreter and libraries came from: "image" (the image's own layers,
    # out of the agent's reach), "agent" (the container's, audited only), "" (not recorded)
    toolchain: str = ""


@dataclass
class TokenLayout:
    """One token sequence per trajectory, exactly as sampled (never re-tokenised)."""

    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)  # 1: a token the policy sampled
    logprobs: list[float] = field(default_factory=list)  # behaviour log-probs (0 where masked)
    step_spans: list[list[int]] = field(default_factory=list)  # per step: [start, end) of its action
    teacher_logprobs: list[float] = field(default_factory=list)  # OPD: teacher on the same ids
    # π_old of the sampled ids under the plain policy (no temperature, no top-p), set by the
    # trainer when sampling changed the distribution; empty: ``logprobs`` are those already
    old_logprobs: list[float] = field(default_factory=list)


@dataclass
class Trajectory:
    task: str
    instruction: str
    agent: str
    steps: list[Step] = field(default_factory=list)
    verifier: VerifierReport | None = None
    termination: str = ""  # done | max_turns | agent_timeout | error | ...
    tokens: TokenLayout | None = None  # set when a policy produced the actions
    trial_dir: str | None = None  # where its trace/, content/ and verifier/ live

    @property
    def flagged(self) -> bool:
        """Tampering was recorded in this episode (see ``integrity``)."""
        return bool(self.integrity)

    def written_paths(self) -> set[str]:
        """Task files the agent's steps wrote (the verifier's runner-file rule needs them)."""
        return {p for s in self.steps if s.command and s.command.accesses
                for p in s.command.accesses.written}

    def changed_paths(self) -> set[str]:
        """Task paths the agent's steps wrote, deleted or changed the metadata of (what the
        verifier's lookups can be evidence about)."""
        return {p for s in self.steps if s.command and s.command.accesses
                for p in (*s.command.accesses.written, *s.command.accesses.deleted,
                          *s.command.accesses.meta)}

    info: dict[str, Any] = field(default_factory=dict)
    integrity: list[str] = field(default_factory=list)  # episode-level tampering reasons
    # in memory only: what step hooks keep while the episode runs (harness/hooks.py)
    live: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class TrialResult:
    task: str
    reward: float
    trial_dir: str
    error: str | None = None
    attempt: int = 0
    duration_s: float = 0.0
    n_steps: int = 0
    suspect: bool = False  # the verifier ran toolchain files the agent made (see VerifierReport)
    integrity: list[str] = field(default_factory=list)  # tampering recorded in the episode


def step_token_counts(traj: Trajectory) -> list[int]:
    """Loss tokens per step (1 per step for a trajectory without tokens)."""
    if traj.tokens is None:
        return [1] * len(traj.steps)
    mask = traj.tokens.loss_mask
    return [max(0, sum(mask[a:b])) for a, b in traj.tokens.step_spans]


# ---------------------------------------------------------------- JSON round trip

# in-memory only: raw traces live in trace/, file contents in content/<sha256>
_SKIP = {("CommandRecord", "trace"), ("FileState", "content"), ("Trajectory", "live")}

# A command's accesses in the trajectory file: the task-level sets as sorted lists, what each
# written path continues as a sorted map, and the environment layer's reads and writes as
# ``env_read``/``env_written``. The summary's other parts (stat lookups, the O_CREAT reads
# the tracer could not decide, the rest of the environment layer, the event count) are
# in-memory only, like the raw trace they come from.
_ACCESS_SETS = ("read", "written", "deleted", "temporary", "executed", "listed", "probed", "meta")
_ENV_SETS = (("env_read", "read"), ("env_written", "written"))


def accesses_to_json(acc: AccessSets) -> dict[str, Any]:
    out: dict[str, Any] = {k: sorted(getattr(acc, k)) for k in _ACCESS_SETS}
    out["derived_from"] = dict(sorted(acc.derived_from.items()))
    env = acc.environment if isinstance(acc, AccessSummary) else AccessSets()
    for key, name in _ENV_SETS:
        out[key] = sorted(getattr(env, name))
    return out


def accesses_from_json(data: dict[str, Any]) -> AccessSummary:
    acc = AccessSummary()
    for k in _ACCESS_SETS:
        setattr(acc, k, set(data.get(k) or ()))
    acc.derived_from = dict(data.get("derived_from") or {})
    for key, name in _ENV_SETS:
        setattr(acc.environment, name, set(data.get(key) or ()))
    return acc


def to_dict(obj: Any) -> Any:
    """Dataclass -> JSON-able dict (drops in-memory-only fields such as raw traces; sets
    become sorted lists)."""
    if isinstance(obj, AccessSets):
        return accesses_to_json(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        name = type(obj).__name__
        return {
            f.name: to_dict(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if (name, f.name) not in _SKIP
        }
    if isinstance(obj, (list, tuple)):
        return [to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    if isinstance(obj, (set, frozenset)):
        return sorted(to_dict(x) for x in obj)
    return obj


def from_dict(cls: type[T], data: Any) -> T:
    """Inverse of ``to_dict`` for the dataclasses of this module (nested, lists, sets,
    optionals, the tracer's access summary)."""
    return _build(cls, data)


def _build(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _build(args[0], data) if len(args) == 1 else data
    if origin in (list, set, frozenset):
        (inner,) = typing.get_args(tp) or (Any,)
        return origin(_build(inner, x) for x in data)
    if isinstance(tp, type) and issubclass(tp, AccessSets):
        return accesses_from_json(data)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        known = {f.name for f in dataclasses.fields(tp)}
        return tp(**{k: _build(hints[k], v) for k, v in data.items() if k in known})
    return data


def save_json(obj: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    # bytes that are not UTF-8 (surrogates in memory) as \udcXX escapes: see rawtext.py
    tmp.write_bytes((json_dumps(to_dict(obj), indent=2) + "\n").encode())
    tmp.replace(path)  # atomic: a crash never leaves half a file


def load_json(cls: type[T], path: Path) -> T:
    return from_dict(cls, json.loads(Path(path).read_bytes()))

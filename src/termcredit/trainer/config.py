"""Training configuration: one dataclass, read from TOML, overridden from the command line."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from ..estimators import INTEGRITY_POLICIES, parse_spec
from ..harness.backend import BACKENDS, BackendSettings
from ..tracer.choice import DEFAULT_TRACER, check_choice
from .generation import GENERATIONS

OPTIMIZERS = ("adamw", "sgd")
from .rollout import RolloutConfig

# [rollout] keys that say where the sandboxes run (harness/backend.py), not how turns go
BACKEND_KEYS = ("backend", "ray_address", "registry")
SANDBOX_KEYS = {"tracer"}


@dataclass
class TrainConfig:
    # an estimator spec: grpo, gigpo, adastep, depgpo, opd, depgpo+opd, ..., with settings in
    # brackets (estimators/spec.py: depgpo[negative=errors]), which go on top of `estimator`
    algo: str = "grpo"
    model: str = "tiny"  # tiny | micro | smollm2-135m | a local HF model directory
    tasks: list[str] = field(default_factory=lambda: ["tasks/hello-world"])
    group_size: int = 4
    steps: int = 10
    lr: float = 1e-4
    seed: int = 0  # sampling and data order
    model_seed: int = 0  # which tiny/micro build to start from (the same for every RL seed)
    device: str = "cpu"  # cpu | cuda | auto
    # rollout sampling: "hf" (a growing KV cache, eager) | "static" (a fixed KV cache, the
    # decode step compiled with CUDA graphs on CUDA; trainer/static_gen.py)
    generation: str = "hf"
    out: str | None = None
    teacher: str | None = None  # OPD teacher: a policy with the same tokenizer
    # SFT warm start before the first update (not on resume): chat-format JSONL, the layout
    # `termcredit refine` writes (trainer.sft.load_sft_jsonl); sft_steps at sft_lr, batch 8
    sft_data: str | None = None
    sft_steps: int = 100
    sft_lr: float = 2e-3
    train_instances: int = 8  # instance seeds 0..n-1 (parametrised tasks)
    # groups per update: this many tasks round robin, one group of group_size each; 0: every
    # task in every update (each update then sees the whole task set)
    tasks_per_step: int = 1
    # turns per episode by task folder name (e.g. the oracle's steps + 2); others: rollout's
    turn_budget: dict[str, int] = field(default_factory=dict)
    eval_every: int = 0  # 0: no periodic evaluation
    eval_at_start: bool = False  # also evaluate before the first update (logged as step -1)
    eval_instances: list[int] = field(default_factory=lambda: [1000, 1001])
    eval_samples: int = 1  # episodes per held-out instance
    eval_temperature: float = 0.0  # 0: greedy pass@1; 1: success of the sampling policy
    checkpoint_every: int = 1
    micro_batch: int = 4
    # the optimizer: "adamw" (default) or "sgd". Adam divides each parameter's step by its
    # own gradient scale, and clipping caps the whole step, so neither lets a larger advantage
    # on a few tokens (credit concentrated on one step) become a larger step there; plain SGD
    # without clipping does (docs/credit-tier.md, "Why the ceiling stays low")
    optimizer: str = "adamw"
    max_grad_norm: float = 1.0  # 0: no clipping (the norm is still measured and logged)
    weight_decay: float = 0.0
    recompute_old_logprobs: bool = False  # True: re-score old log-probs before the update
    dynamic_sampling: bool = False  # DAPO: skip groups whose rewards are all equal
    # episodes with recorded tampering (forged markers, ...): "zero" trains them with reward 0,
    # "mask" drops them from their group (no baseline, no gradient)
    integrity: str = "zero"
    estimator: dict[str, Any] = field(default_factory=dict)  # settings for estimators.build
    loss: dict[str, Any] = field(default_factory=dict)  # LossConfig fields
    # RolloutConfig fields, and backend = "local" | "ray" (ray_address, registry: BACKEND_KEYS)
    rollout: dict[str, Any] = field(default_factory=dict)
    # [sandbox]: tracer = "auto" | "ebpf" | "strace" (tracer/choice.py)
    sandbox: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = "field 'algo'" + (" with [estimator]" if self.estimator else "")
        try:  # kept split (algo "depgpo", [estimator] negative = "errors"): resume reads it back
            self.algo, self.estimator = parse_spec(self.algo, self.estimator)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
        if self.tasks_per_step < 0:
            raise ConfigError(f"field 'tasks_per_step': 0 (every task) or more, "
                              f"not {self.tasks_per_step}")
        bad = {k: v for k, v in self.turn_budget.items() if not isinstance(v, int) or v < 1}
        if bad:
            raise ConfigError(f"field 'turn_budget': turns must be integers >= 1: {bad}")
        backend = self.rollout.get("backend", "local")
        if backend not in BACKENDS:
            raise ConfigError(f"field 'rollout.backend': must be one of "
                              f"{', '.join(map(repr, BACKENDS))}, not {backend!r}")
        for key in ("ray_address", "registry"):
            if not isinstance(self.rollout.get(key, ""), str):
                raise ConfigError(f"field 'rollout.{key}': a string, not "
                                  f"{self.rollout[key]!r}")
        unknown = sorted(set(self.sandbox) - SANDBOX_KEYS)
        if unknown:
            raise ConfigError(f"field 'sandbox': unknown setting(s) {unknown}")
        try:
            check_choice(self.sandbox.get("tracer", DEFAULT_TRACER), "field 'sandbox.tracer'")
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        if self.sft_data is not None and not Path(self.sft_data).is_file():
            raise ConfigError(f"field 'sft_data': {self.sft_data}: no such file")
        if self.sft_steps < 1:
            raise ConfigError(f"field 'sft_steps': 1 or more, not {self.sft_steps}")
        if self.generation not in GENERATIONS:
            raise ConfigError(f"field 'generation': must be one of "
                              f"{', '.join(map(repr, GENERATIONS))}, not {self.generation!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"field 'optimizer': must be one of "
                              f"{', '.join(map(repr, OPTIMIZERS))}, not {self.optimizer!r}")
        if not self.max_grad_norm >= 0:
            raise ConfigError(f"field 'max_grad_norm': 0 (no clipping) or more, "
                              f"not {self.max_grad_norm}")
        if self.integrity not in INTEGRITY_POLICIES:
            raise ConfigError(f"field 'integrity': must be one of "
                              f"{', '.join(map(repr, INTEGRITY_POLICIES))}, not {self.integrity!r}")

    def rollout_config(self) -> RolloutConfig:
        return RolloutConfig(**{k: v for k, v in self.rollout.items() if k not in BACKEND_KEYS})

    @property
    def tracer(self) -> str:
        return str(self.sandbox.get("tracer", DEFAULT_TRACER))

    def backend_settings(self) -> BackendSettings:
        r = self.rollout
        return BackendSettings(r.get("backend", "local"), r.get("ray_address") or None,
                               r.get("registry") or None)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class ConfigError(ValueError):
    pass


def load_config(path: str | Path | None, overrides: dict[str, Any]) -> TrainConfig:
    """TOML file (top-level keys = TrainConfig fields; [estimator]/[loss]/[rollout]/[sandbox]
    tables),
    then the command line's explicit values on top."""
    data: dict[str, Any] = {}
    if path:
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read config: {exc}") from exc
    data.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{path or 'config'}: unknown setting(s) {unknown}")
    try:
        cfg = TrainConfig(**data)
    except ConfigError as exc:
        raise ConfigError(f"{path or 'config'}: {exc}") from exc
    try:
        cfg.rollout_config()
    except TypeError as exc:
        raise ConfigError(f"{path or 'config'}: field 'rollout': {exc}") from exc
    return cfg


def dump_config(cfg: TrainConfig) -> str:
    """TOML for config.toml in the run directory (readable back by load_config)."""
    return tomli_w.dumps(_without_none(cfg.to_dict()))  # TOML has no null: unset = default


def _without_none(table: dict[str, Any]) -> dict[str, Any]:
    return {k: _without_none(v) if isinstance(v, dict) else v
            for k, v in table.items() if v is not None}

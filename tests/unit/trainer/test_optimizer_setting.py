"""TrainConfig.optimizer and max_grad_norm = 0: what one step does to a parameter, by hand."""

from __future__ import annotations

import pytest
import torch

from termcredit.trainer.config import ConfigError, TrainConfig
from termcredit.trainer.update import make_optimizer


def _step(name: str, grad: list[float], lr: float, clip: float) -> list[float]:
    p = torch.nn.Parameter(torch.zeros(len(grad)))
    opt = make_optimizer(name, [p], lr)
    p.grad = torch.tensor(grad)
    torch.nn.utils.clip_grad_norm_([p], clip or float("inf"))
    opt.step()
    return p.detach().tolist()


def test_sgd_unclipped_steps_by_lr_times_gradient() -> None:
    # grad (3, 4): norm 5; SGD without clipping: -lr * g = (-0.3, -0.4) at lr 0.1
    assert _step("sgd", [3.0, 4.0], 0.1, 0.0) == pytest.approx([-0.3, -0.4])
    # clipped at 1: g / 5 -> (-0.06, -0.08)
    assert _step("sgd", [3.0, 4.0], 0.1, 1.0) == pytest.approx([-0.06, -0.08], rel=1e-5)


def test_adamw_first_step_is_lr_times_sign_whatever_the_scale() -> None:
    # Adam's first step: m/(sqrt(v)+eps) = g/|g| = sign(g), so a 10x larger gradient on one
    # coordinate moves it no further: why concentrated credit is no larger step under AdamW
    assert _step("adamw", [30.0, 0.3], 1e-2, 0.0) == pytest.approx([-1e-2, -1e-2], rel=1e-4)


def test_config_names_a_bad_optimizer_and_a_negative_clip() -> None:
    with pytest.raises(ConfigError, match="field 'optimizer'.*'adamw', 'sgd'.*'lion'"):
        TrainConfig(optimizer="lion")
    with pytest.raises(ConfigError, match="field 'max_grad_norm'"):
        TrainConfig(max_grad_norm=-1.0)
    assert TrainConfig(optimizer="sgd", max_grad_norm=0.0).optimizer == "sgd"


def test_a_toml_config_sets_them_and_keeps_them_for_resume(tmp_path) -> None:
    from termcredit.trainer.config import dump_config, load_config

    path = tmp_path / "c.toml"
    path.write_text('optimizer = "sgd"\nlr = 0.1\nmax_grad_norm = 0.0\n')
    cfg = load_config(path, {})
    assert (cfg.optimizer, cfg.lr, cfg.max_grad_norm) == ("sgd", 0.1, 0.0)
    assert 'optimizer = "sgd"' in dump_config(cfg)
    path.write_text('optimizer = "adam"\n')
    with pytest.raises(ConfigError, match=r"c.toml: field 'optimizer'"):
        load_config(path, {})


def test_every_bench_tier_is_a_cli_choice() -> None:
    from termcredit.bench.protocol import TIERS
    from termcredit.cli import build_parser

    for tier in TIERS:
        assert build_parser().parse_args(["bench", "--tier", tier]).tier == tier

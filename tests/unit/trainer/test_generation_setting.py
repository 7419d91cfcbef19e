"""The `generation` setting: "hf" by default, "static" from a config file or --generation,
anything else refused when read; load_policy passes it to the Policy."""

from __future__ import annotations

import pytest

from termcredit.cli import build_parser
from termcredit.trainer.config import ConfigError, dump_config, load_config


def test_default_config_file_and_flag(tmp_path):
    assert load_config(None, {}).generation == "hf"
    path = tmp_path / "c.toml"
    path.write_text('generation = "static"\n')
    cfg = load_config(path, {})
    assert cfg.generation == "static"
    assert 'generation = "static"' in dump_config(cfg)  # kept for --resume
    args = build_parser().parse_args(["train", "--generation", "static"])
    assert args.generation == "static"
    assert build_parser().parse_args(["train"]).generation is None  # the config decides
    assert load_config(path, {"generation": "hf"}).generation == "hf"  # the flag wins


def test_unknown_generation_is_refused(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('generation = "vllm"\n')
    with pytest.raises(ConfigError, match=r"c.toml: field 'generation': must be one of 'hf', "
                                          r"'static', not 'vllm'"):
        load_config(path, {})
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--generation", "vllm"])


def test_the_loaded_policy_samples_with_it(micro_dir):
    from termcredit.trainer.policy import load_policy

    assert load_policy(micro_dir).generation == "hf"
    assert load_policy(micro_dir, generation="static").generation == "static"

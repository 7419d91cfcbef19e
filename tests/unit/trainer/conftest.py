"""Trainer fixtures: the `micro` model and tokenizer, built once per session in a tmp dir."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch", reason="the trainer tests need the `train` extra")
torch.set_num_threads(2)


@pytest.fixture(scope="session")
def micro_dir(tmp_path_factory):
    from termcredit.trainer.tiny import build_tiny

    return build_tiny(tmp_path_factory.mktemp("micro") / "micro-s0", "micro", seed=0)


@pytest.fixture(scope="session")
def micro(micro_dir):
    from termcredit.trainer.policy import load_policy

    return load_policy(micro_dir)


@pytest.fixture(scope="session")
def layout(micro):
    from termcredit.trainer.chat import ChatLayout

    return ChatLayout(micro.tokenizer)

"""Which tracer the sandboxes use is one setting (#33): ``[sandbox] tracer`` in run and train
configs, ``--tracer`` on both verbs; ``auto`` says in one line why it picked strace, and
``ebpf`` where it cannot run is an error with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from termcredit.cli import build_parser
from termcredit.harness.run import RunConfig, resume_config, run, write_config
from termcredit.tasks import load_task
from termcredit.tracer.choice import NOT_WIRED, TracerUnavailable, resolve_tracer
from termcredit.trainer.config import ConfigError, dump_config, load_config

HELLO = Path(__file__).resolve().parents[2] / "tasks" / "hello-world"


def _can() -> str | None:
    return None


def _cannot() -> str | None:
    return "bpftrace is not installed"


def test_strace_is_strace_and_says_nothing():
    assert resolve_tracer("strace", _cannot) == ("strace", None)
    assert resolve_tracer("strace", _can, wired=True) == ("strace", None)


def test_auto_picks_strace_with_the_reason():
    # until sessions are wired, the host is not even asked
    def never() -> str | None:
        raise AssertionError("probed the host")

    assert resolve_tracer("auto", never, wired=False) == (
        "strace", f"tracer: strace (auto: {NOT_WIRED})")
    assert resolve_tracer("auto", _cannot, wired=True) == (
        "strace", "tracer: strace (auto: bpftrace is not installed)")
    backend, note = resolve_tracer("auto", _can, wired=True)
    assert backend == "ebpf" and note is not None and note.startswith("tracer: ebpf (auto:")


def test_ebpf_where_it_cannot_run_is_an_error_naming_why():
    with pytest.raises(TracerUnavailable, match="unavailable on this host: bpftrace is not inst"):
        resolve_tracer("ebpf", _cannot, wired=True)
    with pytest.raises(TracerUnavailable, match="does not yet follow sandbox sessions"):
        resolve_tracer("ebpf", _can, wired=False)
    assert resolve_tracer("ebpf", _can, wired=True) == ("ebpf", None)


def test_an_unknown_tracer_is_refused():
    with pytest.raises(ValueError, match=r"tracer: must be one of 'auto', 'ebpf', 'strace', "
                                         r"not 'dtrace'"):
        resolve_tracer("dtrace", _can)


def test_tracer_flag_on_run_and_train():
    parser = build_parser()
    assert parser.parse_args(["run", "--task", "t"]).tracer == "auto"
    assert parser.parse_args(["run", "--task", "t", "--tracer", "strace"]).tracer == "strace"
    assert parser.parse_args(["train"]).tracer is None  # the config decides
    assert parser.parse_args(["train", "--tracer", "ebpf"]).tracer == "ebpf"
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--task", "t", "--tracer", "ptrace"])


def test_a_train_config_names_its_tracer_in_the_sandbox_table(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[sandbox]\ntracer = "strace"\n')
    cfg = load_config(path, {})
    assert cfg.tracer == "strace"
    assert load_config(None, {}).tracer == "auto"
    saved = tmp_path / "saved.toml"  # the run folder's config.toml reads back the same
    saved.write_text(dump_config(cfg))
    assert load_config(saved, {}).tracer == "strace"
    path.write_text('[sandbox]\ntracer = "dtrace"\n')
    with pytest.raises(ConfigError, match=r"c.toml: field 'sandbox.tracer': must be one of"):
        load_config(path, {})
    path.write_text('[sandbox]\ntracr = "strace"\n')
    with pytest.raises(ConfigError, match=r"field 'sandbox': unknown setting\(s\) \['tracr'\]"):
        load_config(path, {})


def test_a_run_config_keeps_its_tracer_and_a_resume_reads_it(tmp_path):
    hello = load_task(HELLO)
    write_config(RunConfig(tasks=[hello]), tmp_path, "r-1")
    assert "[sandbox]" not in (tmp_path / "config.toml").read_text()  # auto: as before
    assert resume_config(tmp_path).tracer == "auto"
    write_config(RunConfig(tasks=[hello], tracer="strace"), tmp_path, "r-2")
    text = (tmp_path / "config.toml").read_text()
    assert text.startswith("[run]") and '[sandbox]\ntracer = "strace"' in text
    assert resume_config(tmp_path).tracer == "strace"
    assert "sandbox" not in resume_config(tmp_path).extra
    assert resume_config(tmp_path, RunConfig(tasks=[], tracer="ebpf")).tracer == "ebpf"


def test_run_refuses_ebpf_before_any_container(tmp_path, monkeypatch):
    monkeypatch.setattr("termcredit.tracer.choice._ebpf_why_not", _cannot)
    monkeypatch.setattr("termcredit.tracer.choice.EBPF_SESSIONS", True)
    cfg = RunConfig(tasks=[load_task(HELLO)], tracer="ebpf", out=tmp_path / "out")
    with pytest.raises(TracerUnavailable, match="bpftrace is not installed"):
        run(cfg)
    assert not (tmp_path / "out").exists()

"""Issue #37: one algorithm-spec parser (estimators/spec.py) for train, bench and config files.
`termcredit train --algo 'depgpo[negative=errors]'` (the README's example) was refused with
"unknown estimator"; the bracket syntax was bench's only. Expected values by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from termcredit import cli, estimators
from termcredit.estimators import parse_spec, split_spec
from termcredit.trainer import train as train_mod
from termcredit.trainer.config import ConfigError, dump_config, load_config

HELLO = str(Path(__file__).resolve().parents[2] / "tasks" / "hello-world")


def test_the_syntax() -> None:
    assert split_spec("depgpo") == ("depgpo", {})
    assert split_spec("depgpo[]") == ("depgpo", {})
    assert split_spec("depgpo+opd[scope=relevant, beta=0.25]") == (
        "depgpo+opd", {"scope": "relevant", "beta": 0.25})
    assert split_spec('gigpo[anchor="state", std=false, gamma=1]') == (
        "gigpo", {"anchor": "state", "std": False, "gamma": 1})
    with pytest.raises(ValueError, match="'beta' is given twice"):
        split_spec("depgpo[beta=0,beta=1]")


def test_spec_settings_go_on_top_of_a_configs_table() -> None:
    assert parse_spec("depgpo[negative=errors]", {"beta": 0, "negative": "graph"}) == (
        "depgpo", {"beta": 0, "negative": "errors"})


def test_an_unknown_option_is_named_with_the_ones_it_takes() -> None:
    with pytest.raises(ValueError) as err:
        parse_spec("depgpo[negativ=errors]")
    assert "takes no setting(s) ['negativ']" in str(err.value)
    assert "negative" in str(err.value).split("it takes:")[1]


class Recorder:
    """Stands in for the Trainer (which starts sandboxes): what the command line gave it."""
    seen: list[Any] = []

    def __init__(self, cfg: Any, run_dir: Path, **_: Any) -> None:
        Recorder.seen.append((cfg, run_dir))

    def run(self) -> None:
        pass


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> type[Recorder]:
    Recorder.seen = []
    monkeypatch.setattr(train_mod, "Trainer", Recorder)
    return Recorder


def test_train_takes_the_readmes_example(recorder: type[Recorder], tmp_path: Path) -> None:
    rc = cli.main(["train", "--algo", "depgpo[negative=errors]", "--task", HELLO,
                   "--out", str(tmp_path / "run")])
    assert rc == 0
    [(cfg, run_dir)] = recorder.seen
    assert (cfg.algo, cfg.estimator) == ("depgpo", {"negative": "errors"})
    # what the Trainer does with it (train.py: estimators.build(cfg.algo, **cfg.estimator))
    assert estimators.build(cfg.algo, **cfg.estimator).negative == "errors"
    # config.toml keeps it split, and a resume reads the same settings back
    text = dump_config(cfg)
    assert 'algo = "depgpo"\n' in text and '[estimator]\nnegative = "errors"\n' in text
    saved = tmp_path / "config.toml"
    saved.write_text(text)
    again = load_config(saved, {})
    assert (again.algo, again.estimator) == ("depgpo", {"negative": "errors"})


def test_a_config_file_takes_the_syntax_too(recorder: type[Recorder], tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text('algo = "depgpo[negative=errors]"\n[estimator]\nbeta = 0\nnegative = "graph"\n')
    assert cli.main(["train", "--config", str(conf), "--task", HELLO,
                     "--out", str(tmp_path / "run")]) == 0
    assert recorder.seen[0][0].estimator == {"beta": 0, "negative": "errors"}  # brackets win


def test_an_unknown_option_is_refused_naming_it(recorder: type[Recorder], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["train", "--algo", "depgpo[negativ=errors]", "--task", HELLO,
                   "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert rc == 2 and recorder.seen == []
    assert "field 'algo': 'depgpo[negativ=errors]': estimator 'depgpo' takes no setting(s) " \
           "['negativ']" in " ".join(err.split())
    conf = tmp_path / "c.toml"
    conf.write_text('algo = "depgpo"\n[estimator]\nnegative = "everywhere"\n')
    with pytest.raises(ConfigError, match=r"c.toml: field 'algo' with \[estimator\]: 'depgpo': "
                                          r"depgpo: negative must be one of"):
        load_config(conf, {})

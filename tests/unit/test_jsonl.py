"""Issue #37: one JSON-lines reader and writer (jsonl.py). The bytes written are those the six
readers and five writers it replaced wrote; expected values by hand."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from termcredit.jsonl import JsonlError, append_jsonl, read_jsonl, write_jsonl
from termcredit.trainer.actions import SYSTEM_PROMPT
from termcredit.trainer.sft import Demo, load_sft_jsonl
from termcredit.trainer.train import Trainer


def test_bytes_by_hand(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    write_jsonl(f, [{"task": "café", "x": 0.1}, {"n": 1}])  # text as it is (steps, refine)
    assert f.read_bytes() == b'{"task": "caf\xc3\xa9", "x": 0.1}\n{"n": 1}\n'
    write_jsonl(f, [{"task": "café", "x": 0.1}], ascii=True)  # metrics, evaluations
    assert f.read_bytes() == b'{"task": "caf\\u00e9", "x": 0.1}\n'
    append_jsonl(f, {"step": 2, "loss": float("nan")}, ascii=True)
    assert f.read_bytes() == b'{"task": "caf\\u00e9", "x": 0.1}\n{"step": 2, "loss": NaN}\n'
    write_jsonl(f, [])
    assert f.read_bytes() == b"" and not (tmp_path / "a.jsonl.tmp").exists()


def test_a_byte_that_is_not_utf8_is_kept(tmp_path: Path) -> None:
    # refine wrote commands with json.dumps(ensure_ascii=False) + write_text: a command holding
    # the byte 0xff (kept as the surrogate U+DCFF) raised UnicodeEncodeError there
    f = tmp_path / "r.jsonl"
    write_jsonl(f, [{"command": "cat \udcff"}])
    assert f.read_bytes() == b'{"command": "cat \\udcff"}\n'
    assert read_jsonl(f) == [{"command": "cat \udcff"}]


def test_a_line_ends_only_at_newline(tmp_path: Path) -> None:
    # JSON with ensure_ascii=False keeps U+2028 as it is; str.splitlines() split the line there,
    # so load_sft_jsonl refused refine's own file ("not JSON": unterminated string)
    msgs = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "go"},
            {"role": "assistant", "content": "printf 'a\u2028b\x85c' > /app/x"}]
    f = tmp_path / "sft.jsonl"
    f.write_bytes(json.dumps({"messages": msgs}, ensure_ascii=False).encode() + b"\n")
    assert load_sft_jsonl(f) == [Demo("go", [("printf 'a\u2028b\x85c' > /app/x", "")])]


def test_bad_lines_are_named_and_a_torn_tail_is_dropped_only_when_asked(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    f.write_bytes(b'{"step": 0}\n\n{"step": 1}\n{"st')  # killed in the middle of line 4
    assert read_jsonl(f, torn_tail=True) == [{"step": 0}, {"step": 1}]
    with pytest.raises(JsonlError, match=r"m.jsonl:4: not JSON"):
        read_jsonl(f)  # a file written whole has no torn tail: its bad last line is an error
    f.write_bytes(b'{"step": 0}\n{"st\n{"step": 2}\n')
    with pytest.raises(JsonlError, match=r"m.jsonl:2: not JSON"):
        read_jsonl(f, torn_tail=True)  # not the last line: corrupt, not torn
    assert read_jsonl(f, skip_bad=True) == [{"step": 0}, {"step": 2}]
    f.write_bytes(b'{"step": 0}\n[1, 2]\n')
    with pytest.raises(JsonlError, match=r"m.jsonl:2: a JSON list, not an object"):
        read_jsonl(f)
    f.write_bytes(b'{"a": "\xff"}\n')
    with pytest.raises(JsonlError, match=r"m.jsonl:1: not UTF-8"):
        read_jsonl(f)
    with pytest.raises(FileNotFoundError):
        read_jsonl(tmp_path / "none.jsonl")


def test_resume_survives_a_metrics_line_torn_by_the_kill(tmp_path: Path) -> None:
    # the trainer appends a metrics row after each update; SIGKILL in the middle of that write
    # left a torn last line, and the resume's truncation died on it (JSONDecodeError)
    lines = [b'{"step": 0, "loss": 0.5}\n', b'{"step": 1, "loss": 0.25}\n',
             b'{"step": 2, "loss": 0.125}\n']
    (tmp_path / "metrics.jsonl").write_bytes(b"".join(lines) + b'{"step": 3, "lo')
    Trainer._truncate_metrics(SimpleNamespace(run_dir=tmp_path), 2)  # resume from step 2
    assert (tmp_path / "metrics.jsonl").read_bytes() == lines[0] + lines[1]

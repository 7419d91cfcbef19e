"""The reward a verifier wrote: ``reward.txt``, else ``reward.json``, read as untrusted input.

The files come out of a container where the agent was root, so nothing about them is taken on
trust (DESIGN.md, "Threat model"):

* ``reward.txt`` is used whenever it is present, in any form: a symlink, a directory, a FIFO or
  any other non-regular file is rejected (checked with ``lstat`` and opened with
  ``O_NOFOLLOW``, so a link can never make the host read one of its own files), as is a file
  over ``MAX_TXT_BYTES``, text that is not a plain decimal number, and a number that is not
  finite or lies outside [0, 1];
* ``reward.json`` is read only when ``reward.txt`` is absent, with the same file checks (cap
  ``MAX_JSON_BYTES``). It holds a bare number, or an object: its ``"reward"`` value, else the
  mean of its numeric values. Booleans are not numbers, ``NaN``/``Infinity`` are not JSON, and
  the reward must be finite and in [0, 1]; other numeric values are kept as metrics.

Any rejection gives reward 0.0 and an error that names the file and says why.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_TXT_BYTES = 4096
MAX_JSON_BYTES = 65536
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


class RewardError(ValueError):
    pass


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "a special file"


def _read_regular(path: Path, cap: int) -> str:
    """The text of a regular file of at most ``cap`` bytes; RewardError otherwise."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise RewardError(f"{_kind(st.st_mode)}, not a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:  # replaced by a link or a FIFO since the lstat
        if exc.errno == errno.ELOOP:
            raise RewardError("a symlink, not a regular file") from exc
        raise RewardError(f"cannot be opened: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise RewardError(f"{_kind(st.st_mode)}, not a regular file")
        data = f.read(cap + 1)
    if len(data) > cap:
        raise RewardError(f"larger than {cap} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RewardError("not UTF-8 text") from exc


def _in_range(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise RewardError(f"{what} {value!r} is not a finite number")
    if not 0.0 <= value <= 1.0:
        raise RewardError(f"{what} {value!r} is outside [0, 1]")
    return value


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _as_float(v: int | float, what: str) -> float:
    try:
        return float(v)
    except OverflowError as exc:  # an integer too large for a float
        raise RewardError(f"{what} is too large") from exc


def _parse_txt(text: str) -> float:
    s = text.strip()
    if not _NUMBER.fullmatch(s):
        shown = s if len(s) <= 40 else s[:40] + "…"
        raise RewardError(f"not a plain decimal number: {shown!r}")
    return _in_range(_as_float(float(s), "the number"), "the reward")


def _reject_constant(name: str) -> Any:
    raise RewardError(f"not valid JSON: {name} is not a JSON number")


def _parse_json(text: str) -> tuple[float, dict[str, float]]:
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except RewardError:
        raise
    except ValueError as exc:  # JSONDecodeError, or an integer of over 4300 digits
        raise RewardError(f"not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise RewardError("not valid JSON: nested too deeply") from exc
    if _is_number(data):
        return _in_range(_as_float(data, "the number"), "the reward"), {}
    if isinstance(data, bool):
        raise RewardError(f"{json.dumps(data)} is a boolean, not a number")
    if not isinstance(data, dict):
        raise RewardError(f"must hold a number or an object, got {type(data).__name__}")
    metrics = {str(k): _as_float(v, f"value of {k!r}") for k, v in data.items() if _is_number(v)}
    if "reward" in data:
        if not _is_number(data["reward"]):
            raise RewardError(f"\"reward\" must be a number, got {json.dumps(data['reward'])}")
        reward = _in_range(metrics["reward"], "\"reward\"")
    elif not metrics:
        raise RewardError("no numeric reward")
    for k, v in metrics.items():
        if not math.isfinite(v):  # 1e999 parses as inf
            raise RewardError(f"value of {k!r} is not a finite number")
    if "reward" not in data:
        reward = _in_range(sum(metrics.values()) / len(metrics), "the mean of its numbers")
    return reward, metrics


def read_reward(verifier_dir: Path) -> tuple[float, dict[str, float], str | None]:
    """(reward, metrics, error) from a verifier folder copied out of the sandbox.

    ``reward.txt`` when present (in any form), else ``reward.json``; on any rejection the
    reward is 0.0, the metrics are empty and ``error`` names the file and the reason.
    """
    for name, cap in (("reward.txt", MAX_TXT_BYTES), ("reward.json", MAX_JSON_BYTES)):
        path = Path(verifier_dir) / name
        try:
            os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return 0.0, {}, f"{name}: cannot be read: {exc.strerror}"
        try:
            text = _read_regular(path, cap)
            if name == "reward.txt":
                return _parse_txt(text), {}, None
            reward, metrics = _parse_json(text)
            return reward, metrics, None
        except RewardError as exc:
            return 0.0, {}, f"{name}: {exc}"
        except OSError as exc:
            return 0.0, {}, f"{name}: cannot be read: {exc.strerror}"
    return 0.0, {}, "the verifier wrote neither reward.txt nor reward.json"

"""What two trial directories of the same task and agent must share whatever backend ran them:
the trajectory, the dependency graph and the verifier's resources, less what differs from one
run to the next on any backend (wall times, container ids, the secret end tokens, the random
names of temporary files: Python's, sed -i's, .pyc writes'; pytest's timing line)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

VOLATILE = {"duration_s", "end_token", "container", "phases", "trial_dir", "time"}
_PYTEST_TIME = re.compile(r"in \d+\.\d+s")
_TMP = re.compile(r"/tmp/tmp[a-z0-9_]{8}|/tmp/[a-z0-9_]{8}$|/sed[A-Za-z0-9]{6}$|"
                  r"(?<=\.pyc)\.\d+$")


def _norm(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _norm(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_norm(v) for v in obj]
    if isinstance(obj, str):
        return _TMP.sub("<tmp>", _PYTEST_TIME.sub("in <t>s", obj))
    return obj


def trial_facts(trial: Path) -> dict[str, Any]:
    facts = {name: _norm(json.loads((trial / name).read_text()))
             for name in ("trajectory.json", "graph.json", "result.json")}
    facts["result.json"].pop("duration_s", None)
    resources = trial / "verifier" / "resources.json"
    if resources.is_file():
        facts["resources"] = _norm(json.loads(resources.read_text()))
    facts["trace_files"] = sorted(p.name for p in (trial / "trace").iterdir())
    return facts


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two normalised facts differ (empty: equivalent)."""
    if type(a) is not type(b):
        return [f"{path}: {a!r:.80} vs {b!r:.80}"]
    if isinstance(a, dict):
        out = [f"{path}.{k}: only in one" for k in set(a) ^ set(b)]
        for k in sorted(set(a) & set(b)):
            out += differences(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r:.80} vs {b!r:.80}"]

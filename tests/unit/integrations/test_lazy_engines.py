"""termcredit imports without any training engine: only an adapter module imports its own."""

from __future__ import annotations

import json
import subprocess
import sys

ENGINES = ("trl", "skyrl_gym", "verl", "datasets")


def modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport json, sys\n"
                          "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))"],
                         capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_engine_neutral_modules_import_no_engine() -> None:
    loaded = modules_after("import termcredit, termcredit.cli, termcredit.integrations.base, "
                           "termcredit.integrations.token_rewards, "
                           "termcredit.integrations.step_facts")
    assert not loaded & set(ENGINES), loaded & set(ENGINES)


def test_an_adapter_imports_its_engine() -> None:
    assert "skyrl_gym" in modules_after("import termcredit.integrations.skyrl")
    assert "trl" in modules_after("import termcredit.integrations.trl")

"""`termcredit trace`: run commands in one fresh traced sandbox and report what each one did."""

from __future__ import annotations

import secrets
from typing import Any

from ..records import CommandRecord, accesses_to_json
from ..sandbox import Sandbox, SandboxSpec
from .observe import StepObserver


class TraceError(RuntimeError):
    pass


def step_report(rec: CommandRecord) -> dict[str, Any]:
    acc = rec.accesses
    assert acc is not None
    return {
        "command": rec.command, "exit_code": rec.exit_code, "stdout": rec.stdout,
        "stderr": rec.stderr, "duration_s": round(rec.duration_s, 4), "timed_out": rec.timed_out,
        **{k: v for k, v in accesses_to_json(acc).items() if not k.startswith("env_")},
        "new_content": {f.path: f.sha256 for f in rec.files if f.kind == "file"},
    }


def trace_steps(client: Any, image: str, steps: list[str], *, setup: list[str] = (),
                workdir: str | None = None, timeout: float = 120.0,
                grace: float = 2.0, tracer: str = "strace") -> list[dict[str, Any]]:
    """Setup commands run first (traced, so later steps know what they created, but not
    reported); then each step. Background jobs get ``grace`` seconds after the last step.
    ``tracer``: the resolved backend (tracer/choice.py)."""
    run_id = f"trace-{secrets.token_hex(4)}"
    sb = Sandbox(client, SandboxSpec(image=image, workdir=workdir, tracer=tracer), run_id)
    try:
        observer = StepObserver(sb.shell, image_added=sb.added_paths)
        records: list[CommandRecord] = []
        for cmd in list(setup) + list(steps):
            rec = sb.run(cmd, timeout=timeout)
            observer.after_step(rec)
            records.append(rec)
            if len(records) <= len(setup) and rec.exit_code != 0:
                raise TraceError(f"setup command failed ({rec.exit_code}): {cmd}\n{rec.stderr}")
        sb.shell.finish(grace)
        observer.finalize(records, "".join(sb.shell.session_trace))
        return [step_report(r) for r in records[len(setup):]]
    finally:
        sb.remove()

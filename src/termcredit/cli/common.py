"""What every verb of the CLI shares: the stderr console, the log line, the backend and tracer
flags."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from ..show import shown

console = Console(stderr=True, soft_wrap=True)  # errors carry paths: never wrap them


def log(message: str) -> None:
    console.print(shown(message, "dim"))


def backend_of(args: argparse.Namespace) -> Any:
    """The --backend / --ray-address of a verb whose trials run on harness.runner."""
    from ..harness.backend import BackendSettings

    return BackendSettings(args.backend, args.ray_address)


def add_backend_flags(p: argparse.ArgumentParser, default: str | None,
                      shown_default: str = "local") -> None:
    p.add_argument("--backend", choices=["local", "ray"], default=default,
                   help="where sandboxes run: local (this Docker engine) or ray (one host "
                   "actor per Docker node of a Ray cluster; needs the `ray` extra); default "
                   + shown_default)
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="the Ray cluster (default $RAY_ADDRESS, else the one started on this "
                   "machine with `ray start --head`)")


def add_tracer_flag(p: argparse.ArgumentParser, default: str | None, shown_default: str) -> None:
    from ..tracer.choice import TRACER_CHOICES

    p.add_argument("--tracer", choices=TRACER_CHOICES, default=default,
                   help="what traces the sandboxes: strace (ptrace), ebpf (kernel tracepoints, "
                   "on a host that allows it: root, bpftrace) or auto (ebpf where it can "
                   "trace sandboxes, else strace, with a line saying why); default "
                   + shown_default)

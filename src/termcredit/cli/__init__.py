"""The one `termcredit` command; each verb is a thin layer over a package function.

One module per verb group (run, sandbox, credit, train) holds each verb's handler and the
function that adds its parser; tasks, view and audit add theirs from their own packages."""

from __future__ import annotations

import argparse
import signal
import threading

from rich.text import Text

from ..show import shown
from .common import console
from .credit import (add_credit_audit_parser, add_credit_parser, add_graph_parser,
                     add_refine_parser)
from .run import add_run_parser
from .sandbox import add_gc_parser, add_image_parser, add_trace_parser
from .train import add_bench_parser, add_serve_parser, add_train_parser

# in the order `termcredit --help` lists them
VERBS = (add_run_parser, add_image_parser, add_trace_parser, add_credit_parser,
         add_credit_audit_parser, add_refine_parser, add_graph_parser, add_train_parser,
         add_bench_parser, add_serve_parser, add_gc_parser)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="termcredit",
        description="Terminal-agent RL environment with strace-grounded credit assignment.",
    )
    sub = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    for add_parser in VERBS:
        add_parser(sub)
    from ..tasktools.cli import add_tasks_parser

    add_tasks_parser(sub)
    from ..viewer.cli import add_view_parser

    add_view_parser(sub)
    from ..harness.audit_cli import add_audit_parser

    add_audit_parser(sub)
    return p


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from ..sandbox import EngineError, ImageBuildError
    from ..depgpo.load import TrialError
    from ..depgpo.render import RenderError
    from ..harness.trace_cmd import TraceError
    from ..tasks import TaskError
    from ..trainer.config import ConfigError

    # SIGTERM (kill, a scheduler, `timeout`) ends a verb as Ctrl-C does: through its
    # `finally`s, so its sandboxes and pools close and what it finished stays written
    main_thread = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, _interrupt) if main_thread else None
    try:
        return args.func(args)
    except (TaskError, ImageBuildError, EngineError, TraceError, TrialError, RenderError,
            ConfigError, FileNotFoundError, ValueError) as exc:
        console.print(Text("error:", style="red") + Text(" ") + shown(exc))
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if main_thread and old is not None:
            signal.signal(signal.SIGTERM, old)

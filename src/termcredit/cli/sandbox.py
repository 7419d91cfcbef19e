"""The sandbox tools: `termcredit image`, `trace` and `gc`."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.text import Text

from ..rawtext import json_dumps
from ..show import shown
from .common import add_tracer_flag, console, log


def _cmd_image(args: argparse.Namespace) -> int:
    from ..sandbox import ImageMap, docker_client, ensure_base_image
    from ..tasks import load_task
    from ..tasks.build import build_image

    client = docker_client()
    if args.what == "base" and args.list:
        return _list_bases(client)
    if args.what == "base":
        for name in args.paths or [None]:
            print(ensure_base_image(client, force=args.force, log=log,
                                    **({"name": name} if name else {})))
        return 0
    base = ensure_base_image(client, log=log)
    for path in args.paths:
        task = load_task(path)
        print(build_image(client, task, base_ref=base, instance=args.instance,
                          image_map=ImageMap.load(args.image_map), force=args.force, log=log))
    return 0


def _list_bases(client: Any) -> int:
    """`termcredit image base --list`: every base, its Python, and whether it is built."""
    from rich.table import Table

    from ..sandbox import BASES, DEFAULT_BASE, base_image_ref
    from ..sandbox.imagemap import builtin_map_path

    table = Table(title="termcredit base images")
    for col in ("name", "debian", "python", "image", "built"):
        table.add_column(col)
    for base in BASES.values():
        ref = base_image_ref(base.name)
        try:
            size = client.images.get(ref).attrs.get("Size") or 0
            built = f"yes, {size / 1e6:.0f} MB"
        except Exception:  # docker.errors.ImageNotFound: built on first use
            built = "no (built on first use)"
        name = base.name + ("*" if base.name == DEFAULT_BASE else "")
        table.add_row(name, base.suite, base.python, ref, built)
    out = Console()
    out = out if out.is_terminal else Console(width=max(out.width, 120))  # a pipe: no cut refs
    out.print(table)
    out.print(Text("FROM images are mapped to a base by ") + shown(builtin_map_path())
                    + Text(" (and a file given with --image-map or TERMCREDIT_IMAGE_MAP); "
                           "* the default base, FROM termcredit/base"))
    return 0


def add_image_parser(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser("image", help="build the base images or task images",
                       description="Build a base image (default bookworm: "
                       "termcredit/base:<recipe hash>; trixie: termcredit/base-trixie:<hash>; "
                       "cached), list the bases, or build the images of task folders.")
    i.add_argument("what", choices=["base", "task"])
    i.add_argument("paths", nargs="*", metavar="NAME|TASK",
                   help="base names (with `base`; default bookworm) or task folders (with `task`)")
    i.add_argument("--list", action="store_true",
                   help="with `base`: the bases, their Debian release and Python, built or not")
    i.add_argument("--force", action="store_true", help="rebuild even if cached")
    i.add_argument("--image-map", help="TOML file with an [image_map] table for FROM lines")
    i.add_argument("--instance", type=int, default=0, help="instance seed (parametrised tasks)")
    i.set_defaults(func=_cmd_image)


def _cmd_trace(args: argparse.Namespace) -> int:
    from ..harness.trace_cmd import trace_steps
    from ..sandbox import ImageMap, docker_client, ensure_base_image
    from ..tasks import load_task
    from ..tasks.build import build_image

    from ..tracer.choice import for_backend, resolve_tracer

    tracer, note = resolve_tracer(args.tracer)  # ebpf where it cannot run: an error, now
    tracer, note = for_backend(args.tracer, tracer, note, "local")
    if note:
        log(note)
    client = docker_client()
    base = ensure_base_image(client, log=log)
    image = args.image or base
    if args.task:
        task = load_task(args.task)
        image = build_image(client, task, base_ref=base, image_map=ImageMap.load(None),
                            log=log)
    report = trace_steps(client, image, args.step, setup=args.setup or [], workdir=args.workdir,
                         timeout=args.timeout, grace=args.grace, tracer=tracer)
    if args.json:
        print(json_dumps(report, indent=2))  # bytes as \udcXX (rawtext.py)
        return 0
    from rich.table import Table

    table = Table(title=shown(f"termcredit trace ({image})"), show_lines=True)
    for col in ("#", "command", "exit", "read", "written", "deleted", "temporary", "executed"):
        table.add_column(col, overflow="fold")
    for i, r in enumerate(report):
        table.add_row(str(i), shown(r["command"]), str(r["exit_code"]),
                      *(Text("\n").join(shown(p, one_line=True) for p in r[k])
                        for k in ("read", "written", "deleted", "temporary", "executed")))
    Console().print(table)
    return 0


def add_trace_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("trace", help="show which files each command read and wrote",
                       description="Run setup commands, then each --step, traced in one fresh "
                       "sandbox; print per step the files it read (needing their earlier "
                       "content), wrote, deleted, created as temporaries, and executed. "
                       "Absolute paths; the environment layer (/usr, /proc, caches) is left out.")
    src = t.add_mutually_exclusive_group()
    src.add_argument("--task", help="use this task's image (default: the base image)")
    src.add_argument("--image", help="use this image")
    t.add_argument("--setup", action="append", metavar="CMD",
                   help="run before the steps, not reported (repeatable)")
    t.add_argument("--step", action="append", required=True, metavar="CMD",
                   help="a traced step (repeatable, in order)")
    t.add_argument("--workdir", help="starting directory (default: the image's)")
    t.add_argument("--timeout", type=float, default=120.0, help="per-command timeout (s)")
    t.add_argument("--grace", type=float, default=2.0,
                   help="seconds background jobs may run after the last step (default 2)")
    t.add_argument("--json", action="store_true", help="one JSON object per step")
    add_tracer_flag(t, "auto", "auto")
    t.set_defaults(func=_cmd_trace)


def _cmd_gc(args: argparse.Namespace) -> int:
    from ..sandbox import docker_client, gc

    removed = gc(docker_client(), run_id=args.run, everything=args.all)
    console.print(shown(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed)
                                                                  if removed else "")))
    return 0


def add_gc_parser(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser("gc", help="remove containers left by dead runs",
                       description="Remove termcredit containers whose owning process is gone.")
    g.add_argument("--run", help="remove this run id's containers, owner alive or not")
    g.add_argument("--all", action="store_true", help="remove every termcredit container")
    g.set_defaults(func=_cmd_gc)

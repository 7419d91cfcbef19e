"""`termcredit run`: agents on tasks in traced sandboxes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import add_backend_flags, add_tracer_flag, console


def _cmd_run(args: argparse.Namespace) -> int:
    from .. import llm  # noqa: F401  registers the openai:MODEL agents
    from ..depgpo.trial_hook import default_hooks
    from ..harness.run import RunConfig, resume_config, run
    from ..tasks import find_tasks

    if not args.task and not args.resume:
        raise ValueError("give --task PATH (or --resume DIR)")
    tasks = find_tasks(args.task or [], lenient=True)  # a Harbor feature we lack: skipped
    cfg = RunConfig(tasks=tasks, agent=args.agent, attempts=args.attempts,
                    concurrency=args.concurrency, out=Path(args.out) if args.out else None,
                    command_timeout=args.command_timeout, image_map=args.image_map,
                    force_build=args.force_build, instance=args.instance,
                    backend=args.backend, ray_address=args.ray_address, registry=args.registry,
                    network=args.network, hooks=default_hooks(), tracer=args.tracer,
                    agent_options={k: getattr(args, k) for k in (
                        "base_url", "max_turns", "max_tokens", "temperature", "max_requests")})
    if args.resume:
        cfg = resume_config(Path(args.resume), cfg)
    summary = run(cfg, console)
    if args.json:
        print(json.dumps(summary, indent=2))
    return 0


def add_run_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="run agents on tasks in traced Docker sandboxes",
                       description="Run an agent on Harbor-format tasks; each trial gets a fresh "
                       "sandbox, a traced persistent shell and the task's verifier.")
    r.add_argument("--task", action="append", metavar="PATH",
                   help="task folder, or a folder of task folders (repeatable; required "
                   "unless --resume)")
    r.add_argument("--agent", default="oracle",
                   help="oracle | nop | replay:FILE | openai:MODEL | module:Class | "
                   "file.py:Class (default oracle)")
    r.add_argument("--attempts", "-k", type=int, default=1, help="trials per task (default 1)")
    r.add_argument("--concurrency", "-n", type=int, default=2,
                   help="trials at once (default 2)")
    r.add_argument("--out", help="run directory (default runs/<stamp>-<agent>)")
    r.add_argument("--command-timeout", type=float, default=120.0,
                   help="per-command timeout in seconds (default 120)")
    r.add_argument("--image-map", help="TOML file with an [image_map] table for FROM lines")
    r.add_argument("--force-build", action="store_true", help="rebuild task images")
    r.add_argument("--instance", type=int, default=0,
                   help="instance seed for parametrised tasks (default 0)")
    r.add_argument("--network", metavar="NAME", help="grant this existing Docker network to "
                   "the agents of tasks that permit one (allow_internet = true, network_mode = "
                   "\"public\"/\"allowlist\"); it is left before verification unless the "
                   "task's [verifier] network_mode asks too. Default: no network for anyone")
    r.add_argument("--json", action="store_true", help="print result.json to stdout")
    add_tracer_flag(r, "auto", "auto (a resumed run: its own)")
    r.add_argument("--resume", metavar="DIR", help="finish a killed run in DIR with its "
                   "config.toml: trials with a result.json are kept, the others run again "
                   "(their partial folders moved aside as attempt-<k>.killed-<n>)")
    add_backend_flags(r, "local")
    r.add_argument("--registry", metavar="HOST[:PORT]/PREFIX", help="ray backend: pull "
                   "task images from this registry before building them on a node")
    o = r.add_argument_group(
        "openai:MODEL", "a model behind an OpenAI-compatible /chat/completions (vLLM, SGLang, "
        "a hosted API, `termcredit serve`); the API key comes from $OPENAI_API_KEY (none for a "
        "local server)")
    o.add_argument("--base-url", metavar="URL", help="the API's base URL, e.g. "
                   "http://127.0.0.1:8000/v1 (default $OPENAI_BASE_URL, else "
                   "https://api.openai.com/v1)")
    o.add_argument("--max-turns", type=int, metavar="N",
                   help="replies per episode before it ends as max_turns (default 30)")
    o.add_argument("--max-tokens", type=int, metavar="N",
                   help="max_tokens of each reply (default 1024)")
    o.add_argument("--temperature", type=float, metavar="T",
                   help="sampling temperature (default: the server's)")
    o.add_argument("--max-requests", type=int, metavar="N",
                   help="requests in flight at once to the endpoint, whatever -n is (default 4);"
                   " 429/5xx/connection errors are retried with exponential backoff")
    r.set_defaults(func=_cmd_run)

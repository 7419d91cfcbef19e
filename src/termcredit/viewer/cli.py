"""The `termcredit view` verb: build the run viewer's static site, optionally serve it on
127.0.0.1."""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
from pathlib import Path
from urllib.parse import quote


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # one line per request would bury the URL


def make_server(root: str | Path, port: int = 8765,
                host: str = "127.0.0.1") -> http.server.ThreadingHTTPServer:
    """An HTTP server for the files under ``root`` (port 0: any free port); not started."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    return http.server.ThreadingHTTPServer((host, port), handler)


def site_server(index: Path, run_dir: Path, port: int = 8765,
                ) -> tuple[http.server.ThreadingHTTPServer, str]:
    """The server and the index URL. Its root is the run directory when the site lies inside
    it (so the trial pages' links to raw trajectory/verifier/trace files work), else the site."""
    site, root = index.parent.resolve(), run_dir.resolve()
    if not site.is_relative_to(root):
        root = site
    server = make_server(root, port)
    url = (f"http://127.0.0.1:{server.server_address[1]}/"
           + quote(index.resolve().relative_to(root).as_posix()))
    return server, url


def serve(index: Path, run_dir: Path, port: int = 8765) -> None:
    """Serve until Ctrl-C."""
    server, url = site_server(index, run_dir, port)
    print(f"serving {url}  (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()


def _cmd_view(args: argparse.Namespace) -> int:
    from .site import build_view

    run_dir = Path(args.run_dir)
    index = build_view(run_dir, args.out, graphs=not args.no_graphs)
    print(index)
    if args.serve:
        serve(index, run_dir, args.port)
    return 0


def add_view_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    v = subparsers.add_parser(
        "view", help="static HTML viewer of a run directory",
        description="Write a static HTML site for a `termcredit run` or `termcredit train` "
        "directory: an index (summary, reward curve of a training run, a table of trials) and "
        "one page per trial (instruction, verifier, each step's command and output, DepGPO "
        "credit, the dependency graph when Graphviz is installed). No JavaScript, no network.")
    v.add_argument("run_dir", metavar="RUN_DIR")
    v.add_argument("-o", "--out", help="site folder (default RUN_DIR/view)")
    v.add_argument("--serve", action="store_true",
                   help="then serve it on 127.0.0.1 until Ctrl-C (prints the URL)")
    v.add_argument("--port", type=int, default=8765, help="port for --serve (default 8765; "
                   "0: any free port)")
    v.add_argument("--no-graphs", action="store_true",
                   help="skip the dependency graphs (faster on large training runs)")
    v.set_defaults(func=_cmd_view)
    return v

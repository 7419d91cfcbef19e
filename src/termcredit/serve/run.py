"""`termcredit serve`'s main loop: load the policy, bind, print the address, serve until Ctrl-C or
SIGTERM."""

from __future__ import annotations

import ipaddress
import signal
from dataclasses import dataclass
from typing import Any, Callable

from .engine import PolicyEngine, resolve_source, served_name
from .server import RequestLog, make_server

TRAIN_EXTRA = ("termcredit serve runs the model with torch and transformers, which come with the "
               "`train` extra: pip install 'termcredit[train]' (or `make setup`)")


class MissingExtra(RuntimeError):
    pass


@dataclass
class ServeConfig:
    model: str = "tiny"
    host: str = "127.0.0.1"
    port: int = 8000
    device: str = "auto"
    max_tokens: int = 1024  # the most one reply may have, whatever a request asks
    log: str | None = None
    name: str | None = None  # the model id clients see (default: from ``model``)


def load_engine(cfg: ServeConfig) -> PolicyEngine:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(f"{TRAIN_EXTRA} ({exc})") from None
    from ..trainer.policy import load_policy

    if cfg.max_tokens < 1:
        raise ValueError(f"--max-tokens must be at least 1, not {cfg.max_tokens}")
    return PolicyEngine(load_policy(resolve_source(cfg.model), device=cfg.device),
                        max_tokens=cfg.max_tokens)


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/v1" if ":" in host else f"http://{host}:{port}/v1"


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(cfg: ServeConfig, *, announce: Callable[[str], Any] = print,
          warn: Callable[[str], Any] = print) -> None:
    if not 0 <= cfg.port <= 65535:
        raise ValueError(f"--port must be from 0 to 65535, not {cfg.port}")
    engine = load_engine(cfg)
    name = cfg.name or served_name(cfg.model)
    log = RequestLog(cfg.log)
    try:
        httpd = make_server(engine.complete, name, host=cfg.host, port=cfg.port, log=log)
    except OSError as exc:
        log.close()
        raise ValueError(f"cannot listen on {cfg.host}:{cfg.port}: {exc.strerror or exc}") from None
    if not _loopback(cfg.host):
        warn(f"warning: listening on {cfg.host}, not loopback: anyone who can reach this "
             "machine can use the model (there is no authentication)")
    old = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        announce(f"serving {name} on {_url(cfg.host, httpd.server_address[1])}")
        httpd.serve_forever(poll_interval=0.2)
    finally:
        signal.signal(signal.SIGTERM, old)
        httpd.server_close()
        log.close()


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt

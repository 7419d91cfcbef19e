"""A task's network keys: what it permits, which termcredit grants only on request.

Harbor writes the policy as ``[environment] network_mode`` ("no-network", "public",
"allowlist" with ``allowed_hosts``), older releases as ``[environment] allow_internet``; the
``[agent]`` and ``[verifier]`` sections may override it for their phase. Permission is not a
grant: every sandbox starts without a network, and only ``termcredit run --network NAME`` joins
the agent's container to the user's network NAME, for tasks that permit it. Two deliberate
differences from Harbor:

* a task that states no policy permits nothing (Harbor's default is "public"): a task that
  needs the network says so, and nothing else is ever granted one;
* the verifier gets a network only when ``[verifier] network_mode`` itself permits one (the
  environment's policy does not reach the verifier): it scores what the agent left, offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

MODES = ("no-network", "public", "allowlist")
# (section, key) of every network key, honoured here
NETWORK_KEYS: tuple[tuple[str, str], ...] = (
    ("environment", "network_mode"), ("environment", "allowed_hosts"),
    ("environment", "allow_internet"), ("agent", "network_mode"), ("agent", "allowed_hosts"),
    ("verifier", "network_mode"), ("verifier", "allowed_hosts"))


@dataclass
class NetworkPolicy:
    agent: bool = False  # the agent's phase may be granted a network
    verifier: bool = False  # the verifier asks for one too
    allowed_hosts: list[str] = field(default_factory=list)  # the agent's allowlist, if any


Fail = Callable[[str, str], Exception]  # (message, dotted key) -> the error to raise


def _mode(section: str, body: dict[str, Any], fail: Fail) -> tuple[str | None, list[str]]:
    """The section's explicit (network_mode, allowed_hosts); mode None when unstated."""
    mode, hosts = body.get("network_mode"), body.get("allowed_hosts")
    if mode is not None and mode not in MODES:
        raise fail("must be " + " or ".join(f'"{m}"' for m in MODES) + f", got {mode!r}",
                   f"{section}.network_mode")
    if hosts is not None:
        if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
            raise fail(f"must be a list of host names, got {hosts!r}", f"{section}.allowed_hosts")
        if mode != "allowlist":
            raise fail('only valid with network_mode = "allowlist"', f"{section}.allowed_hosts")
    return mode, list(hosts or [])


def resolve(data: dict[str, Any], fail: Fail) -> NetworkPolicy:
    """The task's policy from its parsed task.toml; ``fail`` makes the error for a bad key."""
    env = data.get("environment", {})
    mode, hosts = _mode("environment", env, fail)
    legacy = env.get("allow_internet")
    if legacy is not None and not isinstance(legacy, bool):
        raise fail(f"must be true or false, got {type(legacy).__name__} {legacy!r}",
                   "environment.allow_internet")
    if mode is None and legacy is not None:  # Harbor: network_mode wins over allow_internet
        mode = "public" if legacy else "no-network"
    agent_mode, agent_hosts = _mode("agent", data.get("agent", {}), fail)
    if agent_mode is not None:
        mode, hosts = agent_mode, agent_hosts
    verifier_mode, _ = _mode("verifier", data.get("verifier", {}), fail)
    return NetworkPolicy(agent=mode in ("public", "allowlist"),
                         verifier=verifier_mode in ("public", "allowlist"),
                         allowed_hosts=hosts if mode == "allowlist" else [])

"""The bpftrace program of the *shared* host tracer: one program, many sessions (#33).

One bpftrace program takes tens of seconds to attach its ~100 probes here, so sandboxes cannot
each start their own: one program runs for the host and follows every session registered with
it. The probes, records and framing are ``ebpf_program``'s, with three changes:

* **Registration**, not a root pid fixed in BEGIN: the harness calls
  ``prctl(REGISTER, pid, tag, key)``; a probe on prctl's entry sets ``@t[pid] = tag`` when the
  option and the 63-bit ``key`` (random, in the program only: the host's bpftrace argv and
  files are out of the agent's reach) match and the caller's PID namespace is the host's (the
  agent, root in its container or not, lives in another one and cannot register anything).
  The kernel then follows the pid's descendants as before (``@t[child] = @t[parent]``).
* **Every record carries its session's tag** right after the nonce (``<N><tag>:<kind>...``),
  so user space routes records by tag, not by tid (records from different CPUs reach user
  space out of order: a child's first call can come before its parent's fork record).
  ``demux`` strips it and hands each session the framing ``ebpf_format`` reads.
* **One syscall set for every role**: the tag's low bit marks a verifier session, and only
  those trace the stat family (an agent's ``ls`` pays no stat records).
"""

from __future__ import annotations

import re

from .ebpf_fence import fence_probe
from .ebpf_program import (CLONE_CALLS, EXEC_CALLS, _call_probes, _exec_clone_probes, flush_probe,
                           fork_record, numbering)
from .protocol import STRACE_STAT_SET, VERIFIER

REGISTER = 0x74634D52  # prctl option no kernel defines ("tcMR"): EINVAL for anyone else
KEY_BITS = 63
STAT_NAMES = frozenset(STRACE_STAT_SET.split(","))


def tag_of(session: int, role: str) -> int:
    """The value ``@t`` holds for a session's tasks: never 0 (0 is "not traced")."""
    if session < 1:
        raise ValueError(f"session ids start at 1, not {session}")
    return session << 1 | (1 if role == VERIFIER else 0)


def session_of(tag: int) -> int:
    return tag >> 1


def _tagged(text: str, nonce: str) -> str:
    """Every printf of ``text`` with the printing task's tag first (see the module doc)."""
    return re.sub(r'printf\("' + nonce + r'([^"]*)", ',
                  lambda m: f'printf("{nonce}%lld:{m.group(1)}", (int64)@t[tid], ', text)


def _stat_only_verifiers(text: str) -> str:
    return text.replace("/@t[tid]", "/(@t[tid] & 1)")


def shared_program(nonce: str, key: int, host_pidns: int) -> str:
    """The program for every session of this host: ``key`` registers, only from a task whose
    PID namespace (for its children: the agent cannot set it to the host's) is
    ``host_pidns``."""
    if not nonce.isalnum():
        raise ValueError(f"nonce must be alphanumeric: {nonce!r}")
    if not 0 < key < 1 << KEY_BITS:
        raise ValueError("key must be a positive 63-bit number")
    num = numbering(VERIFIER)  # the superset: an agent session's tag keeps stats out
    kept = [f"@e{num.nr(n)}" for n in num.names if n not in EXEC_CALLS + CLONE_CALLS]
    parts = [
        f'BEGIN {{ printf("{nonce}0:R %llu{nonce}Z\\n", nsecs); }}\n',
        flush_probe(),
        # the host's thread is in no session: its tag is 0, written out (not read from @t)
        fence_probe(nonce, key, host_pidns).replace(f'"{nonce}B ', f'"{nonce}0:B '),
        # registration: args are the caller's; the tag comes from the harness, not the task
        f"tracepoint:syscalls:sys_enter_prctl /args->option == {REGISTER} && "
        f"args->arg4 == {key} && args->arg3 > 1 && "
        f"curtask->nsproxy->pid_ns_for_children->ns.inum == {host_pidns}/ {{\n"
        f"  @t[args->arg2] = args->arg3;\n"
        # acknowledged only if the map took it (a full map refuses silently): else the
        # harness's wait for the G record fails the sandbox's start, loudly
        f"  if (@t[args->arg2] == args->arg3) {{\n"
        f'    printf("{nonce}%lld:G %llu %d{nonce}Z\\n", (int64)args->arg3, nsecs, '
        f"(int32)args->arg2);\n  }}\n}}\n",
        _tagged("tracepoint:sched:sched_process_fork /@t[args->parent_pid]/ {\n"
                "  @t[args->child_pid] = @t[args->parent_pid]; @kid[tid] = args->child_pid;\n"
                + fork_record(nonce) + "}\n", nonce),
        _tagged("tracepoint:sched:sched_process_exit /@t[tid]/ {\n"
                f'  printf("{nonce}Q %llu %d %d{nonce}Z\\n", nsecs, tid, curtask->exit_code);\n'
                "  delete(@t[tid]); delete(@kid[tid]); delete(@ts[tid]);\n"
                + "".join(f"  delete({m}[tid]);\n" for m in kept) + "}\n", nonce),
        "END { clear(@t); clear(@kid); clear(@ts); "
        + " ".join(f"clear({m});" for m in kept) + " }\n",
    ]
    for name in num.names:
        if name in EXEC_CALLS + CLONE_CALLS:
            probes = _exec_clone_probes(nonce, num.nr(name), name)
        else:
            probes = _call_probes(nonce, num.nr(name), name)
        if name in STAT_NAMES:
            probes = _stat_only_verifiers(probes)
        parts.append(_tagged(probes, nonce))
    return "".join(parts)

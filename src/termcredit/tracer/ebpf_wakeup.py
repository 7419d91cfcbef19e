"""bpftrace's perf buffers announced every WAKEUP_EVENTS events instead of every one (#33).

What an eBPF record costs here is mostly its wakeup, not the probe: bpftrace 0.17 opens its
per-CPU perf buffers through BCC's ``bpf_open_perf_buffer``, which sets ``wakeup_events = 1``,
so every printf makes the kernel raise an irq_work in the traced task's own syscall, a
self-interrupt (in a VM: an exit to the hypervisor), whether or not the reader is asleep.
Measured on this host (``find /usr/lib``, ~16k records): 1.79x untraced as shipped, 1.23x with
a wakeup every 16 events, 1.14x with no records printed at all.

BCC has the knob (``bpf_open_perf_buffer_opts``' ``wakeup_events``, which BCC's own Python API
exposes); bpftrace 0.17 has no option for it. This module builds a one-function library that
bpftrace is started with (``LD_PRELOAD``): its ``bpf_open_perf_buffer`` calls BCC's
``_opts`` variant with ``TC_WAKEUP_EVENTS``. Everything else is bpftrace's and BCC's own. The
program pairs it with ``flush_probe`` (``ebpf_program``): a buffer holding fewer than
WAKEUP_EVENTS records would otherwise never be announced. Where no C compiler is found the
library is not built and bpftrace runs as shipped (a wakeup per record, the flush probe off).
Where the host must have every record (a step's end, a session's, the tracer's stop) it
fences (``ebpf_fence``) instead of waiting for a tick. ``TERMCREDIT_EBPF_BATCHED_WAKEUPS=0``
runs bpftrace as shipped.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile

from .ebpf_program import WAKEUP_EVENTS

ENV = "TC_WAKEUP_EVENTS"
# On unless set to 0. (It was opt-in while the stop waited two flush ticks before SIGINT: a
# session traced for a few milliseconds came back empty in 1 of ~8 tries. bpftrace detaches
# its probes, the flush probe with them, before its last drain; a stop now fences first.)
OPT_OUT = "TERMCREDIT_EBPF_BATCHED_WAKEUPS"
SOURCE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

/* BCC's (libbcc_bpf) options for a perf buffer, as its libbpf.h declares them */
struct bcc_perf_buffer_opts { int pid; int cpu; int wakeup_events; };
typedef void *(*open_opts_t)(void *, void *, void *, int, struct bcc_perf_buffer_opts *);

/* BCC's bpf_open_perf_buffer with wakeup_events from the environment instead of 1 */
void *bpf_open_perf_buffer(void *raw_cb, void *lost_cb, void *cookie, int pid, int cpu,
                           int page_cnt) {
  open_opts_t open_opts = (open_opts_t)dlsym(RTLD_DEFAULT, "bpf_open_perf_buffer_opts");
  const char *n = getenv("TC_WAKEUP_EVENTS");
  struct bcc_perf_buffer_opts opts = { pid, cpu, n ? atoi(n) : 1 };
  if (open_opts == NULL)
    return NULL;
  if (opts.wakeup_events < 1)
    opts.wakeup_events = 1;
  return open_opts(raw_cb, lost_cb, cookie, page_cnt, &opts);
}
"""


@functools.cache
def library() -> str | None:
    """The built library's path (in a directory only this user can write), or None where it
    cannot be built (no C compiler, or the build failed)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    out = tempfile.mkdtemp(prefix="termcredit-ebpf-")  # mode 0700
    src, lib = os.path.join(out, "wakeup.c"), os.path.join(out, "wakeup.so")
    with open(src, "w") as f:
        f.write(SOURCE)
    done = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib, src, "-ldl"],
                          capture_output=True, timeout=120)
    return lib if done.returncode == 0 and os.path.exists(lib) else None


def wakeup_env(env: dict[str, str]) -> tuple[dict[str, str], int]:
    """``env`` for bpftrace with batched wakeups unless OPT_OUT is 0 or the library does not
    build, and the wakeup count it runs with (1: as shipped)."""
    if env.get(OPT_OUT) == "0":
        return env, 1
    lib = library()
    if lib is None:
        return env, 1
    return dict(env, LD_PRELOAD=lib, **{ENV: str(WAKEUP_EVENTS)}), WAKEUP_EVENTS

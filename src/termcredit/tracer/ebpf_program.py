"""The bpftrace program of the eBPF backend, generated from one table of syscalls.

The program runs on the host and follows the *descendants* of one root pid (a map filled by
``sched_process_fork`` and emptied by ``sched_process_exit``), as ``strace -f`` does: it holds
however the agent moves between PID, mount or user namespaces, and whatever it calls its
processes. It prints raw records; ``ebpf_format`` turns them into the strace lines the parser
reads (cwd, paths, quoting live there, not in the kernel).

What it costs is the records, and mostly their wakeups: bpftrace 0.17 asks the kernel to
announce every perf-buffer event, a self-interrupt in the traced task's own syscall; bpftrace
is started with that batched to one per WAKEUP_EVENTS (``ebpf_wakeup``); ``flush_probe``
announces what a batch left over at FLUSH_HZ, and a fence (``ebpf_fence``) at once, where the
host must know it has every record. So a traced call makes *one* record, printed
at its exit from arguments the entry kept in a per-call map, with its first string inline; and
nothing else is traced: an fd's path is found without following close, dup or fcntl, because
each fd argument is sent as its ``struct file`` (and that file's dentry, so a freed and reused
file is not mistaken for the old one), read from the task's fd table in the kernel, and each
open's result the same way. An fd shares its file with its dups and its fork's copies, and a
closed fd's file is gone, so the user-space map file -> path needs no fd table at all.

Record framing (each printf is one record): ``<N>K t tid ...`` up to ``<N>Z`` and a newline,
where ``<N>`` is a fresh random nonce per run. Only string arguments carry bytes chosen by
the agent; they cannot contain the nonce (the agent never sees the host's bpftrace argv), so
no file name can forge, split or end a record.

    <N>C n t tid nr ret a0 a1 ... f0 d0 ... [rf rd] BYTES<N>Z
                                      one finished call: n numbers, then (where the call has
                                      a string) chunk 0 of its first string; f/d: file and
                                      dentry of each fd argument, rf/rd those of an open's fd
    <N>E t tid nr a0 a1 ... f0 d0 ... <N>Z  entry of execve/execveat and the clone family
    <N>S t tid i k BYTES<N>Z          chunk k of string argument i of the call that began at t
    <N>X t tid nr ret<N>Z             exit of execve/execveat/clone* (clone's child as host pid)
    <N>F t parent child<N>Z           a traced task forked (threads too)
    <N>Q t tid code<N>Z               a traced task exited (code: the kernel's exit_code)
    <N>R t<N>Z                        every probe is attached (printed by BEGIN)
    <N>O t child<N>Z                  a traced task forked a child the full map cannot hold
    <N>B cpu seq t<N>Z                the host's fence ``seq`` on ``cpu`` (``ebpf_fence``)

Strings are read ``CHUNK`` bytes at a time (bpftrace 0.17 keeps strings on the 512-byte BPF
stack): chunk k+1 is printed while chunk k is full; chunks after the first short one are not
part of the string (the reader stops there).
"""

from __future__ import annotations

from dataclasses import dataclass

from .protocol import STRACE_STAT_SET, STRACE_TRACE_SET

STRLEN = 128  # BPFTRACE_STRLEN: a string, its copy in the printf and the kept arguments fit the 512-byte BPF stack
CHUNK = STRLEN - 1  # characters a full chunk holds
MAX_CHUNKS = 4096 // CHUNK + 1  # PATH_MAX
MAX_ARGV = 16  # execve argv elements read (strace prints them all; enough for attribution)

# What strace prints for each argument, in its order: fd (dirfd/fd, signed), str (a path
# or string), flags (hex), mode (octal), int, ptr (an address, printed as NULL/0x...),
# argv (a string array), how (openat2's struct open_how), cargs (clone3's struct clone_args).
SYSCALLS: dict[str, tuple[tuple[str, str], ...]] = {
    "open": (("filename", "str"), ("flags", "flags"), ("mode", "mode")),
    "openat": (("dfd", "fd"), ("filename", "str"), ("flags", "flags"), ("mode", "mode")),
    "openat2": (("dfd", "fd"), ("filename", "str"), ("how", "how"), ("usize", "int")),
    "creat": (("pathname", "str"), ("mode", "mode")),
    "rename": (("oldname", "str"), ("newname", "str")),
    "renameat": (("olddfd", "fd"), ("oldname", "str"), ("newdfd", "fd"), ("newname", "str")),
    "renameat2": (("olddfd", "fd"), ("oldname", "str"), ("newdfd", "fd"), ("newname", "str"),
                  ("flags", "flags")),
    "unlink": (("pathname", "str"),),
    "unlinkat": (("dfd", "fd"), ("pathname", "str"), ("flag", "flags")),
    "rmdir": (("pathname", "str"),),
    "link": (("oldname", "str"), ("newname", "str")),
    "linkat": (("olddfd", "fd"), ("oldname", "str"), ("newdfd", "fd"), ("newname", "str"),
               ("flags", "flags")),
    "symlink": (("oldname", "str"), ("newname", "str")),
    "symlinkat": (("oldname", "str"), ("newdfd", "fd"), ("newname", "str")),
    "mkdir": (("pathname", "str"), ("mode", "mode")),
    "mkdirat": (("dfd", "fd"), ("pathname", "str"), ("mode", "mode")),
    "mknod": (("filename", "str"), ("mode", "mode"), ("dev", "int")),
    "mknodat": (("dfd", "fd"), ("filename", "str"), ("mode", "mode"), ("dev", "int")),
    "truncate": (("path", "str"), ("length", "int")),
    "ftruncate": (("fd", "fd"), ("length", "int")),
    "execve": (("filename", "str"), ("argv", "argv"), ("envp", "ptr")),
    "execveat": (("fd", "fd"), ("filename", "str"), ("argv", "argv"), ("envp", "ptr"),
                 ("flags", "flags")),
    "clone": (("newsp", "ptr"), ("clone_flags", "flags"), ("parent_tidptr", "ptr"),
              ("child_tidptr", "ptr"), ("tls", "ptr")),
    "clone3": (("uargs", "cargs"), ("size", "int")),
    "fork": (),
    "vfork": (),
    "chdir": (("filename", "str"),),
    "fchdir": (("fd", "fd"),),
    "utimensat": (("dfd", "fd"), ("filename", "str"), ("utimes", "ptr"), ("flags", "flags")),
    "fchmodat": (("dfd", "fd"), ("filename", "str"), ("mode", "mode")),
    "chmod": (("filename", "str"), ("mode", "mode")),
    "fchownat": (("dfd", "fd"), ("filename", "str"), ("user", "int"), ("group", "int"),
                 ("flag", "flags")),
    "chown": (("filename", "str"), ("user", "int"), ("group", "int")),
    "lchown": (("filename", "str"), ("user", "int"), ("group", "int")),
    "utime": (("filename", "str"), ("times", "ptr")),
    "utimes": (("filename", "str"), ("utimes", "ptr")),
    "futimesat": (("dfd", "fd"), ("filename", "str"), ("utimes", "ptr")),
    # the verifier's stat family (strace's names; the tracepoints of stat/lstat are new*)
    "stat": (("filename", "str"), ("statbuf", "ptr")),
    "lstat": (("filename", "str"), ("statbuf", "ptr")),
    "newfstatat": (("dfd", "fd"), ("filename", "str"), ("statbuf", "ptr"), ("flag", "flags")),
    "statx": (("dfd", "fd"), ("filename", "str"), ("flags", "flags"), ("mask", "flags"),
              ("buffer", "ptr")),
    "access": (("filename", "str"), ("mode", "mode")),
    "faccessat": (("dfd", "fd"), ("filename", "str"), ("mode", "mode")),
    "faccessat2": (("dfd", "fd"), ("filename", "str"), ("mode", "mode"), ("flags", "flags")),
}  # fmt: skip
TRACEPOINT_NAME = {"stat": "newstat", "lstat": "newlstat"}
CLONE_CALLS = ("clone", "clone3", "fork", "vfork")


@dataclass(frozen=True)
class Numbering:
    """Syscall name <-> the small number records carry (stable within one program)."""

    names: tuple[str, ...]

    def nr(self, name: str) -> int:
        return self.names.index(name)


WAKEUP_EVENTS = 16  # perf-buffer events per reader wakeup, where ebpf_wakeup's library builds
FLUSH_HZ = 100  # a record waits at most this long to be announced


def flush_probe() -> str:
    """With a wakeup per WAKEUP_EVENTS events, a CPU's last few records would wait for more:
    at each tick, on every CPU, WAKEUP_EVENTS empty printfs (events that print nothing) make
    the kernel announce the buffer, and the reader takes all of it. ``$1`` is the wakeup
    count bpftrace runs with (``ebpf.launch``): at 1 there is nothing to flush."""
    return f'profile:hz:{FLUSH_HZ} /$1 > 1/ {{ unroll({WAKEUP_EVENTS}) {{ printf(""); }} }}\n'


def fork_record(nonce: str) -> str:
    """The fork probe's record, once the child is in the traced-tasks map: a full map (its
    keys are preallocated) refuses the update silently, and the child and all it runs would go
    untraced; an O record then says so instead of F, and is counted as a lost event (the step
    is flagged)."""
    return (f"  if (@t[args->child_pid] == 0) {{\n"
            f'    printf("{nonce}O %llu %d{nonce}Z\\n", nsecs, args->child_pid);\n  }} else {{\n'
            f'    printf("{nonce}F %llu %d %d{nonce}Z\\n", nsecs, args->parent_pid, '
            "args->child_pid);\n  }\n")


def traced_names(role: str) -> tuple[str, ...]:
    """The strace set of a session (the verifier's adds the stat family), in strace's order."""
    from .protocol import VERIFIER

    names = STRACE_TRACE_SET.split(",") + (STRACE_STAT_SET.split(",") if role == VERIFIER else [])
    return tuple(names)


def numbering(role: str) -> Numbering:
    return Numbering(traced_names(role))




OPEN_CALLS = ("open", "openat", "openat2", "creat")
EXEC_CALLS = ("execve", "execveat")


def record_size(name: str) -> int:
    """How many numbers a C record of ``name`` carries after its count: t, tid, nr, ret, the
    arguments, a file and a dentry per fd argument, and an open's result file and dentry."""
    spec = SYSCALLS[name]
    fds = sum(1 for _, kind in spec if kind == "fd")
    return 4 + len(spec) + 2 * fds + (2 if name in OPEN_CALLS else 0)


def _file_of(var: str, fd: str) -> str:
    """Statements setting $<var>f/$<var>d to the struct file and dentry behind fd ``fd`` of the
    current task (0 where there is none: AT_FDCWD, a closed or too large fd)."""
    return (f"  $v = (int64){fd}; ${var}f = (uint64)0; ${var}d = (uint64)0;\n"
            f"  $fdt = curtask->files->fdt;\n"
            f"  if ($v >= 0 && $v < (int64)$fdt->max_fds) {{\n"
            f"    $x = *($fdt->fd + $v);\n"
            f"    if ($x != 0) {{ ${var}f = (uint64)$x; ${var}d = (uint64)$x->f_path.dentry; }}\n"
            f"  }}\n")


def _str_read(nonce: str, probe: str, i: int, ptr: str, t: str, first: int = 0,
              guard: str = "") -> str:
    """A probe of its own (strings share no BPF stack) printing string argument ``i`` at
    ``ptr`` chunk by chunk from chunk ``first``, keyed by the call's entry time ``t``."""
    head = ""
    if first == 0:
        head = f'  printf("{nonce}S %llu %d {i} 0 %s{nonce}Z\\n", $t, tid, str($p));\n'
    return (
        f"tracepoint:syscalls:{probe} /@t[tid]/ {{\n{guard}"
        f"  $t = {t}; $p = (uint64){ptr};\n{head}"
        f"  $k = (uint64)1;\n"
        f"  while ($k < {MAX_CHUNKS}) {{\n"
        # chunk k exists when chunk k-1 is full: read with one byte less it is shorter. (The
        # byte at k*CHUNK-1 alone says nothing: past the string's NUL it is stale memory.)
        f"    $q = $p + ($k - 1) * {CHUNK};\n"
        f"    if (str($q, {CHUNK + 1}) == str($q, {CHUNK})) {{ break; }}\n"
        f'    printf("{nonce}S %llu %d {i} %d %s{nonce}Z\\n", $t, tid, $k, str($p + $k * {CHUNK}));\n'
        f"    $k++;\n"
        f"  }}\n}}\n"
    )


def _arg_values(spec: tuple[tuple[str, str], ...]) -> list[str]:
    out = []
    for field, kind in spec:
        if kind == "how":
            out.append(f"(int64)((struct open_how *)args->{field})->flags")
        elif kind == "cargs":
            out.append(f"(int64)((struct clone_args *)args->{field})->flags")
        else:  # a string's or argv's pointer too: NULL is printed as such
            out.append(f"(int64)args->{field}")
    return out


def _fd_files(spec: tuple[tuple[str, str], ...]) -> tuple[str, list[str]]:
    """Statements reading each fd argument's file and dentry, and their variable names."""
    code, names = "", []
    for i, (field, kind) in enumerate(spec):
        if kind == "fd":
            code += _file_of(f"a{i}", f"args->{field}")
            names += [f"$a{i}f", f"$a{i}d"]
    return code, names


def _call_probes(nonce: str, nr: int, name: str) -> str:
    """One record per call, at its exit: the entry keeps its arguments in ``@e<nr>[tid]``
    (strings are read at the exit, where the kernel has just copied them itself: at the entry
    their page may not be resident yet, and a tracepoint cannot fault it in)."""
    spec = SYSCALLS[name]
    tp = TRACEPOINT_NAME.get(name, name)
    fd_code, fd_vars = _fd_files(spec)
    kept = ["nsecs", *_arg_values(spec), *fd_vars]
    enter = (f"tracepoint:syscalls:sys_enter_{tp} /@t[tid]/ {{\n{fd_code}"
             f"  @e{nr}[tid] = ({', '.join(kept)});\n}}\n")
    e = f"@e{nr}[tid]"
    strs = [i for i, (_, kind) in enumerate(spec) if kind == "str"]
    extra = ""  # the strings' further chunks and any second string: S records, before C
    for j, i in enumerate(strs):
        extra += _str_read(nonce, f"sys_exit_{tp}", i, f"{e}.{1 + i}", f"{e}.0",
                           first=1 if j == 0 else 0)
    vals = [f"{e}.{k}" for k in range(len(kept))]  # no copy of the tuple: stack room
    body = ""
    if name in OPEN_CALLS:
        body += _file_of("r", "args->ret")
        vals += ["$rf", "$rd"]
    vals = [vals[0], "tid", str(nr), "(int64)args->ret", *vals[1:]]
    text, text_arg = "", ""
    if strs:
        text, text_arg = " %s", f", str({e}.{1 + strs[0]})"
    n = record_size(name)
    fmt = "%llu %d %d " + " ".join(["%lld"] * (n - 3))
    leave = (f"tracepoint:syscalls:sys_exit_{tp} /@t[tid] && {e}.0/ {{\n{body}"
             f'  printf("{nonce}C {n} {fmt}{text}{nonce}Z\\n", {", ".join(vals)}{text_arg});\n'
             f"  delete({e});\n}}\n")
    return enter + extra + leave


def _exec_clone_probes(nonce: str, nr: int, name: str) -> str:
    """execve and the clone family: an entry and an exit record. exec's strings are read at
    the entry (its old memory is gone at the exit; argv and the name are on a resident stack);
    a clone's entry must come before the child's fork record (its flags decide what is shared)."""
    spec = SYSCALLS[name]
    fd_code, fd_vars = _fd_files(spec)
    vals = _arg_values(spec) + fd_vars
    strings = ""
    for i, (field, kind) in enumerate(spec):
        if kind == "str":
            strings += _str_read(nonce, f"sys_enter_{name}", i, f"args->{field}", "@ts[tid]")
        elif kind == "argv":
            for j in range(MAX_ARGV):  # a NULL entry ends the array
                guard = f"  if (args->{field}[{j}] == 0) {{ return; }}\n"
                strings += _str_read(nonce, f"sys_enter_{name}", 100 + j, f"args->{field}[{j}]",
                                     "@ts[tid]", guard=guard)
    fmt = " ".join(["%lld"] * len(vals))
    enter = (f"tracepoint:syscalls:sys_enter_{name} /@t[tid]/ {{\n{fd_code}"
             f"  $t = nsecs; @ts[tid] = $t;\n"
             f'  printf("{nonce}E %llu %d {nr} {fmt}{nonce}Z\\n", $t, tid'
             + "".join(f", {v}" for v in vals) + ");\n}\n")
    ret = "args->ret"
    if name in CLONE_CALLS:
        # the return value is the child's pid in the caller's PID namespace; the records
        # name tasks by host tid, as --pidns-translation makes strace do
        ret = "(args->ret > 0 ? @kid[tid] : args->ret)"
    leave = (f"tracepoint:syscalls:sys_exit_{name} /@t[tid]/ {{\n"
             f'  printf("{nonce}X %llu %d {nr} %lld{nonce}Z\\n", nsecs, tid, (int64){ret});\n}}\n')
    return enter + strings + leave


def program(root_pid: int, nonce: str, role: str, fence: tuple[int, int] | None = None) -> str:
    """The bpftrace program tracing ``root_pid`` and its descendants for session ``role``;
    ``fence``: (key, host PID namespace) of its fence probe (``ebpf_fence``), if any."""
    if not nonce.isalnum():
        raise ValueError(f"nonce must be alphanumeric: {nonce!r}")
    from .ebpf_fence import fence_probe

    num = numbering(role)
    kept = [f"@e{num.nr(n)}" for n in num.names if n not in EXEC_CALLS + CLONE_CALLS]
    parts = [
        # BEGIN runs once every probe is attached: the ready record says tracing has begun
        f'BEGIN {{ @t[{int(root_pid)}] = 1; printf("{nonce}R %llu{nonce}Z\\n", nsecs); }}\n',
        flush_probe(),
        fence_probe(nonce, *fence) if fence else "",
        "tracepoint:sched:sched_process_fork /@t[args->parent_pid]/ {\n"
        "  @t[args->child_pid] = 1; @kid[tid] = args->child_pid;\n"
        + fork_record(nonce) + "}\n",
        # a task killed inside a call (an open of a FIFO blocks) leaves its kept arguments:
        # deleted here, or the maps (4096 keys) would fill and later calls go unrecorded
        "tracepoint:sched:sched_process_exit /@t[tid]/ {\n"
        f'  printf("{nonce}Q %llu %d %d{nonce}Z\\n", nsecs, tid, curtask->exit_code);\n'
        "  delete(@t[tid]); delete(@kid[tid]); delete(@ts[tid]);\n"
        + "".join(f"  delete({m}[tid]);\n" for m in kept) + "}\n",
        "END { clear(@t); clear(@kid); clear(@ts); "
        + " ".join(f"clear({m});" for m in kept) + " }\n",
    ]
    for name in num.names:
        if name in EXEC_CALLS + CLONE_CALLS:
            parts.append(_exec_clone_probes(nonce, num.nr(name), name))
        else:
            parts.append(_call_probes(nonce, num.nr(name), name))
    return "".join(parts)

"""The bpftrace program of the eBPF backend, generated from one table of syscalls.

The program runs on the host and follows the *descendants* of one root pid (a map filled by
``sched_process_fork`` and emptied by ``sched_process_exit``), as ``strace -f`` does: it holds
however the agent moves between PID, mount or user namespaces, and whatever it calls its
processes. It prints raw records; ``ebpf_format`` turns them into the strace lines the parser
reads (fd table, cwd, quoting live there, not in the kernel).

Record framing (each printf is one record): ``<N>K t tid ...`` up to ``<N>Z`` and a newline,
where ``<N>`` is a fresh random nonce per run. Only string arguments carry bytes chosen by
the agent; they cannot contain the nonce (the agent never sees the host's bpftrace argv), so
no file name can forge, split or end a record.

    <N>E t tid nr a0 a1 ... <N>Z      syscall entry, numeric arguments (t: entry nsecs)
    <N>S t tid i k BYTES<N>Z          chunk k of string argument i of that entry
    <N>X t tid nr ret<N>Z             syscall exit (clone's child as a host pid)
    <N>F t parent child<N>Z           a traced task forked (threads too)
    <N>Q t tid code<N>Z               a traced task exited (code: the kernel's exit_code)
    <N>R t<N>Z                        every probe is attached (printed by BEGIN)

Strings are read ``CHUNK`` bytes at a time (bpftrace 0.17 keeps strings on the 512-byte BPF
stack): chunk k+1 is printed while byte k*CHUNK-1 is not NUL; chunks after the first short
one are not part of the string (the reader stops there).
"""

from __future__ import annotations

from dataclasses import dataclass

from .protocol import STRACE_STAT_SET, STRACE_TRACE_SET

STRLEN = 200  # BPFTRACE_STRLEN; with one string per printf this fits the BPF stack
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
# Not printed as lines: they keep the fd table that strace's -y reads from /proc. fcntl only
# for F_DUPFD (0), F_SETFD (2) and F_DUPFD_CLOEXEC (1030): filtered in the kernel.
FD_CALLS: dict[str, tuple[str, ...]] = {
    "close": ("fd",), "close_range": ("fd", "max_fd", "flags"), "dup": ("fildes",),
    "dup2": ("oldfd", "newfd"), "dup3": ("oldfd", "newfd", "flags"), "fcntl": ("fd", "cmd", "arg"),
}  # fmt: skip
FCNTL_CMDS = (0, 2, 1030)


@dataclass(frozen=True)
class Numbering:
    """Syscall name <-> the small number records carry (stable within one program)."""

    names: tuple[str, ...]

    def nr(self, name: str) -> int:
        return self.names.index(name)


def traced_names(role: str) -> tuple[str, ...]:
    """The strace set of a session (the verifier's adds the stat family), in strace's order."""
    from .protocol import VERIFIER

    names = STRACE_TRACE_SET.split(",") + (STRACE_STAT_SET.split(",") if role == VERIFIER else [])
    return tuple(names)


def numbering(role: str) -> Numbering:
    return Numbering(traced_names(role) + tuple(FD_CALLS))


def _str_read(nonce: str, probe: str, i: int, ptr: str, guard: str = "") -> str:
    """A probe of its own (strings share no BPF stack) printing string argument ``i`` at
    ``ptr`` chunk by chunk, keyed by the entry's time that the entry probe left in @ts."""
    return (
        f"tracepoint:syscalls:{probe} /@t[tid]/ {{\n{guard}"
        f"  $t = @ts[tid]; $p = (uint64){ptr};\n"
        f'  printf("{nonce}S %llu %d {i} 0 %s{nonce}Z\\n", $t, tid, str($p));\n'
        f"  $k = (uint64)1;\n"
        f"  while ($k < {MAX_CHUNKS}) {{\n"
        f'    if (str($p + $k * {CHUNK} - 1, 2) == "") {{ break; }}\n'
        f'    printf("{nonce}S %llu %d {i} %d %s{nonce}Z\\n", $t, tid, $k, str($p + $k * {CHUNK}));\n'
        f"    $k++;\n"
        f"  }}\n}}\n"
    )


EXEC_CALLS = ("execve", "execveat")


def _probes(nonce: str, nr: int, name: str) -> str:
    """Entry probe, string probes, exit probe, attached (and so run) in this order.

    Strings are read at the exit, where the kernel has just copied them itself: at the entry
    their page may not be resident yet (a libc constant), and a tracepoint cannot fault it in.
    The entry keeps their addresses in @p<i>. Not execve's: its old memory is gone at the
    exit, so its strings are read at the entry (argv and the name are on a resident stack)."""
    spec = SYSCALLS[name]
    tp = TRACEPOINT_NAME.get(name, name)
    at_exit = name not in EXEC_CALLS
    nums = []
    keep = ""
    strings = ""
    for i, (field, kind) in enumerate(spec):
        if kind == "str":
            nums.append(f"(int64)args->{field}")  # the pointer: NULL is printed as such
            if at_exit:
                keep += f"  @p{i}[tid] = (uint64)args->{field};\n"
                strings += _str_read(nonce, f"sys_exit_{tp}", i, f"@p{i}[tid]")
            else:
                strings += _str_read(nonce, f"sys_enter_{tp}", i, f"args->{field}")
        elif kind == "how":
            nums.append(f"((struct open_how *)args->{field})->flags")
        elif kind == "cargs":
            nums.append(f"((struct clone_args *)args->{field})->flags")
        elif kind == "argv":
            nums.append(f"(int64)args->{field}")
            for j in range(MAX_ARGV):  # a NULL entry ends the array
                guard = f"  if (args->{field}[{j}] == 0) {{ return; }}\n"
                strings += _str_read(nonce, f"sys_enter_{tp}", 100 + j, f"args->{field}[{j}]", guard)
        else:
            nums.append(f"(int64)args->{field}")
    fmt = " ".join(["%lld"] * len(nums))
    head = f'  $t = nsecs; @ts[tid] = $t;\n{keep}  printf("{nonce}E %llu %d {nr} {fmt}{nonce}Z\\n", $t, tid'
    head += "".join(f", {n}" for n in nums) + ");\n"
    enter = f"tracepoint:syscalls:sys_enter_{tp} /@t[tid]/ {{\n{head}}}\n"
    ret = "args->ret"
    if name in ("clone", "clone3", "fork", "vfork"):
        # the return value is the child's pid in the caller's PID namespace; the records
        # name tasks by host tid, as --pidns-translation makes strace do
        ret = "(args->ret > 0 ? @kid[tid] : args->ret)"
    leave = (f"tracepoint:syscalls:sys_exit_{tp} /@t[tid]/ {{\n"
             f'  printf("{nonce}X %llu %d {nr} %lld{nonce}Z\\n", nsecs, tid, (int64){ret});\n}}\n')
    return enter + strings + leave


def _fd_probe(nonce: str, nr: int, name: str) -> str:
    fields = FD_CALLS[name]
    pred = "@t[tid]"
    if name == "fcntl":
        pred += " && (" + " || ".join(f"args->cmd == {c}" for c in FCNTL_CMDS) + ")"
    fmt = " ".join(["%lld"] * len(fields))
    vals = "".join(f", (int64)args->{f}" for f in fields)
    return (f"tracepoint:syscalls:sys_enter_{name} /{pred}/ {{\n"
            f'  printf("{nonce}E %llu %d {nr} {fmt}{nonce}Z\\n", nsecs, tid{vals});\n}}\n'
            f"tracepoint:syscalls:sys_exit_{name} /{pred.split(' &&')[0]}/ {{\n"
            f'  printf("{nonce}X %llu %d {nr} %lld{nonce}Z\\n", nsecs, tid, (int64)args->ret);\n}}\n')


def program(root_pid: int, nonce: str, role: str) -> str:
    """The bpftrace program tracing ``root_pid`` and its descendants for session ``role``."""
    if not nonce.isalnum():
        raise ValueError(f"nonce must be alphanumeric: {nonce!r}")
    num = numbering(role)
    parts = [
        # BEGIN runs once every probe is attached: the ready record says tracing has begun
        f'BEGIN {{ @t[{int(root_pid)}] = 1; printf("{nonce}R %llu{nonce}Z\\n", nsecs); }}\n',
        "tracepoint:sched:sched_process_fork /@t[args->parent_pid]/ {\n"
        "  @t[args->child_pid] = 1; @kid[tid] = args->child_pid;\n"
        f'  printf("{nonce}F %llu %d %d{nonce}Z\\n", nsecs, args->parent_pid, args->child_pid);\n}}\n',
        "tracepoint:sched:sched_process_exit /@t[tid]/ {\n"
        f'  printf("{nonce}Q %llu %d %d{nonce}Z\\n", nsecs, tid, curtask->exit_code);\n'
        "  delete(@t[tid]); delete(@kid[tid]); delete(@ts[tid]);\n"
        "  delete(@p0[tid]); delete(@p1[tid]); delete(@p2[tid]); delete(@p3[tid]);\n}\n",
        "END { clear(@t); clear(@kid); clear(@ts); clear(@p0); clear(@p1); clear(@p2); clear(@p3); }\n",
    ]
    for name in traced_names(role):
        parts.append(_probes(nonce, num.nr(name), name))
    for name in FD_CALLS:
        parts.append(_fd_probe(nonce, num.nr(name), name))
    return "".join(parts)

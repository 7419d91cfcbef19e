"""Namespace init: runs inside the sandbox, under strace, as the root of one traced session.

Started by the shim (``shim.py``) as ``python3 -c LOADER CTL_FD SRC_FD ROLE [wait]`` while the
container is still pristine (before any agent command), so this code is the image's own interpreter
running source that never touches the container's file system. Stdlib only.

It ``unshare``s a PID and a mount namespace and forks; the child is pid 1 there. That init
mounts a fresh ``/proc`` (showing only the session's processes, so the harness's shim and
strace, which stay outside, cannot be seen, signalled, traced or opened through ``/proc``),
re-applies Docker's masks on it. For the verifier, at verification, it builds a root of its own
(pristine.py) with private tmpfs folders at ``/tests`` and ``/logs/verifier`` that no agent
process can see or reach, and reports whether they are still the ones it mounted. It then reaps orphans and, when the shim
asks over the control socket, forks a ``bash`` with the shell's pipes (passed as SCM_RIGHTS),
after dropping to the agent's capabilities and installing a seccomp filter that forbids new
namespaces and mounts. The init itself keeps the container's capabilities: the kernel then
refuses the agent ptrace-style access to it, and drops signals it has no handler for.
"""
import ctypes
import fcntl
import json
import os
import platform
import select
import signal
import socket
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWPID = 0x20000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
# the agent's capabilities: chown, dac_override, fowner, fsetid, kill, setgid, setuid,
# net_bind_service (Docker's default set without the ones a task never needs)
KEEP_CAPS = frozenset({0, 1, 3, 4, 5, 6, 7, 10})
PRIVATE_SIZES = {"/tests": "256m", "/logs/verifier": "64m"}
# namespace flags and CLONE_UNTRACED: a clone with any of them is refused
CLONE_DENY = 0x7E020000 | 0x80 | 0x00800000
# arch -> (AUDIT_ARCH, refused syscalls, clone, clone3)
ARCHES = {
    "x86_64": (0xC000003E, (272, 308, 165, 166, 155, 428, 429, 430, 431, 432, 433, 442), 56, 435),
    "aarch64": (0xC00000B7, (97, 268, 40, 39, 41, 428, 429, 430, 431, 432, 433, 442), 220, 435),
}


def check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def mount(src, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()
    check(libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
          "mount " + target)


def send(sock, msg, fds=()):
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))] if fds else []
    sock.sendmsg([json.dumps(msg).encode()], anc)


def recv(sock):
    data, anc, _, _ = sock.recvmsg(1 << 16, socket.CMSG_SPACE(16 * 4))
    if not data:
        return None, []
    fds = []
    for level, kind, raw in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += struct.unpack("%di" % (len(raw) // 4), raw[: len(raw) // 4 * 4])
    return json.loads(data), fds


def setup_mounts(role):
    """A fresh /proc with Docker's masks (without them uid 0 could write host-wide sysctls)."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in ("acpi", "asound", "scsi"):
        if os.path.isdir("/proc/" + name):
            mount("tmpfs", "/proc/" + name, "tmpfs", MS_RDONLY)
    for name in ("kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug"):
        if os.path.exists("/proc/" + name):
            mount("/dev/null", "/proc/" + name, None, MS_BIND)
    for name in ("bus", "fs", "irq", "sys", "sysrq-trigger"):
        path = "/proc/" + name
        if os.path.exists(path):
            mount(path, path, None, MS_BIND)
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)


PRIVATE = {}  # path -> (st_dev, st_ino) of the private tmpfs mounted there


def check_private():
    """The private folders that no longer are the tmpfs mounted there (unmounted, replaced)."""
    changed = []
    for path, ident in sorted(PRIVATE.items()):
        try:
            info = os.lstat(path)
            now = (info.st_dev, info.st_ino)
        except OSError:
            now = None
        if now != ident:
            changed.append(path)
    return changed


def mount_private(path):
    """A private tmpfs at ``path`` in this namespace: whatever an agent put there (files, a
    symlink, a read-only folder) is moved aside or hidden, and agent processes never see it.
    The mount goes through an O_PATH descriptor of the folder just checked, so a symlink
    swapped in meanwhile cannot redirect it."""
    for attempt in range(20):
        try:
            fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY)
        except OSError:
            if os.path.lexists(path):  # not a plain folder: move it out of the way
                os.rename(path, "%s.agent-%d-%d" % (path, os.getpid(), attempt))
            try:
                os.makedirs(path, mode=0o755)
            except FileExistsError:
                pass
            continue
        try:
            mount("tmpfs", "/proc/self/fd/%d" % fd, "tmpfs", MS_NOSUID | MS_NODEV,
                  "size=%s,mode=0755" % PRIVATE_SIZES[path])
        finally:
            os.close(fd)
        info = os.lstat(path)
        PRIVATE[path] = (info.st_dev, info.st_ino)
        return
    raise OSError("cannot make a private %s" % path)


def seccomp_program():
    arch, refused, clone, clone3 = ARCHES[platform.machine()]
    eperm, enosys, allow = 0x00050001, 0x00050026, 0x7FFF0000
    ld = lambda off: (0x20, 0, 0, off)
    jeq = lambda k, jt, jf: (0x15, jt, jf, k)
    ret = lambda k: (0x06, 0, 0, k)
    prog = [ld(4), jeq(arch, 1, 0), ret(eperm), ld(0)]  # other ABIs (compat, x32): refused
    if arch == 0xC000003E:
        prog += [(0x35, 0, 1, 0x40000000), ret(eperm)]  # x32 syscall numbers
    for nr in refused:
        prog += [jeq(nr, 0, 1), ret(eperm)]
    prog += [jeq(clone3, 0, 1), ret(enosys)]  # flags in memory: libc falls back to clone
    prog += [jeq(clone, 0, 3), ld(16), (0x45, 0, 1, CLONE_DENY), ret(eperm), ret(allow)]
    return b"".join(struct.pack("HBBI", *ins) for ins in prog)


def restrict():
    """In the shell's process before exec: the agent's capabilities and the seccomp filter."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        if cap not in KEEP_CAPS:
            check(libc.prctl(24, cap, 0, 0, 0), "PR_CAPBSET_DROP")
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL (absent on old kernels: nothing to clear)
    hdr, data = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()
    check(libc.capget(hdr, data), "capget")
    data[2] = data[5] = 0  # inheritable: an exec as root gets exactly the bounding set
    check(libc.capset(hdr, data), "capset")
    check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    code = seccomp_program()
    buf = ctypes.create_string_buffer(code, len(code))
    prog = struct.pack("HxxxxxxQ", len(code) // 8, ctypes.addressof(buf))
    check(libc.prctl(22, 2, ctypes.c_char_p(prog), 0, 0), "seccomp")


def spawn(msg, fds):
    """Fork the session's shell; its pid, or the reason it could not be forked (no pid left:
    the agent's processes took them) after closing the shell's pipes."""
    try:
        pid = os.fork()
    except OSError as exc:
        for fd in fds:
            os.close(fd)
        return "cannot fork the shell: %s" % os.strerror(exc.errno or 0)
    if pid == 0:
        try:
            os.setsid()
            # stdin, stdout, stderr, then the shell-state pipe as fd 3 (moved out of the way
            # first, so the dup2s below cannot overwrite it)
            state = fcntl.fcntl(fds[3], fcntl.F_DUPFD, 10) if len(fds) > 3 else None
            for i, fd in enumerate(fds[:3]):
                os.dup2(fd, i)
            if state is not None:
                os.dup2(state, 3)
            os.closerange(3 if state is None else 4, 1 << 16)
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            try:
                os.chdir(msg.get("cwd") or "/")
            except OSError:
                os.chdir("/")
            # the OOM killer's order: the agent's processes first (+1000, inherited, and the
            # floor the agent cannot lower without CAP_SYS_RESOURCE), the harness's (-1000) never
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write(str(int(msg.get("oom_score_adj", 0))))
            restrict()
            shell = msg.get("shell") or "bash"
            os.execvpe(shell, [os.path.basename(shell), "--norc", "--noprofile"], msg["env"])
        except BaseException as exc:  # noqa: BLE001 - the child must never return
            os.write(2, ("termcredit: cannot start the shell: %s\n" % exc).encode())
        os._exit(127)
    for fd in fds:
        os.close(fd)
    return pid


def serve(ctl):
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_DFL)  # no handler: the kernel drops these for an ns init
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    shells = set()
    while True:
        ready = select.select([ctl, wake_r], [], [])[0]
        if wake_r in ready:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in shells:
                shells.discard(pid)
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
                send(ctl, {"op": "exited", "pid": pid, "code": code})
        if ctl in ready:
            msg, fds = recv(ctl)
            if msg is None:
                os._exit(0)  # the shim is gone: the namespace (every process in it) ends here
            if msg.get("op") == "spawn" and len(fds) in (3, 4):
                pid = spawn(msg, fds)
                if isinstance(pid, str):
                    send(ctl, {"op": "spawned", "pid": None, "error": pid})
                else:
                    shells.add(pid)
                    send(ctl, {"op": "spawned", "pid": pid})
            elif msg.get("op") == "prepare" and not PRIVATE:
                try:
                    report = prepare_root(list(msg.get("declared") or []), msg.get("workdir"))
                    mount_private("/logs/verifier")
                    send(ctl, report)
                except Exception as exc:  # noqa: BLE001 - reported; the init must go on
                    send(ctl, {"op": "prepared", "error": "%s: %s" % (type(exc).__name__, exc)})
            elif msg.get("op") == "check":
                send(ctl, {"op": "checked", "changed": check_private()})
            elif msg.get("op") == "mount" and msg.get("path") in PRIVATE_SIZES:
                try:
                    mount_private(msg["path"])
                    send(ctl, {"op": "mounted"})
                except OSError as exc:
                    send(ctl, {"op": "mounted", "error": str(exc)})


def main():
    ctl = socket.socket(fileno=int(sys.argv[1]))
    role = sys.argv[3]
    os.close(int(sys.argv[2]))
    if sys.argv[4:5] == ["wait"]:
        # traced from the host (eBPF): nothing forks before the host has registered this
        # process with its tracer and the shim says go (an EOF instead: the shim is gone)
        msg, _ = recv(ctl)
        if not msg or msg.get("op") != "go":
            os._exit(1)
    try:
        check(libc.unshare(CLONE_NEWPID | CLONE_NEWNS), "unshare")
        mount(None, "/", None, MS_REC | MS_PRIVATE)
    except OSError as exc:
        send(ctl, {"op": "error", "error": str(exc)})
        os._exit(1)
    pid = os.fork()
    if pid:  # still in the container's PID namespace: report the init's pid there and leave
        send(ctl, {"op": "init", "pid": pid})
        os._exit(0)
    try:
        setup_mounts(role)
    except OSError as exc:
        send(ctl, {"op": "error", "error": str(exc)})
        os._exit(1)
    send(ctl, {"op": "up"})
    serve(ctl)


main()

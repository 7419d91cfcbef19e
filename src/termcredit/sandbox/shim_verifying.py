"""What a shim session does while the verifier runs (see shim.py): the agent's session drained in
the background (``watch``), the verifier's session's own root and private folders (``prepare``,
``mount_private``, ``check_private``: requests to its namespace init, pristine.py). Runs inside
the sandbox (its source is sent ahead of shim_session's). Stdlib only.
"""
import os
import select
import time

try:  # imported as part of the package (tests); in the sandbox the sources come first
    from .shim_procs import Capped, ctl_send
except ImportError:
    pass

WATCH_CAP = 64 << 20  # trace kept while watching agent processes during verification


class Verifying:
    """Session's verification-time requests (a mixin: it uses the session's trace, control
    socket and pipes)."""

    def _watcher(self):
        """The background drain (see ``watch``), made with the session: a thread is a pid, and
        one made only at verification could find none left (the agent's processes took them)."""
        go_r, stop_r = self.watch_pipes[0], self.watch_pipes[2]
        sink = Capped(0)
        while os.read(go_r, 1):
            try:
                while True:
                    os.read(stop_r, 64)  # a stop left from a loop that ended on its own
            except BlockingIOError:
                pass
            cut, outputs, ended = 0, [fd for fd in (self.out_fd, self.err_fd) if fd is not None], False
            while not ended:
                ready = select.select(self._with_trace(self.ctl, stop_r) + outputs, [], [],
                                      0.5)[0]
                if stop_r in ready:
                    break
                for fd in ready:
                    if fd is self.ctl:
                        self._ctl_messages()
                    elif fd == self.trace_fd:
                        if not self._drain_trace():
                            ended = True
                            break
                        if len(self.trace) > WATCH_CAP:
                            cut += len(self.trace) - WATCH_CAP
                            del self.trace[WATCH_CAP:]
                    elif not self._read_into(fd, sink):
                        outputs.remove(fd)
            if not ended:
                self._drain_trace()
            if cut:
                self._flag("trace of agent processes during verification cut (%d bytes)" % cut)
            self.watch_done.set()

    def watch(self):
        """Keep draining this session (trace, output) in the background, e.g. while the
        verifier runs: agent services go on, traced, and never block on a full pipe."""
        if self.watcher is None:
            self.watch_done.clear()
            os.write(self.watch_pipes[1], b"x")
            self.watcher = True

    def unwatch(self):
        if self.watcher is not None:
            os.write(self.watch_pipes[3], b"x")
            self.watch_done.wait()
            self.watcher = None
        self._drain_trace()
        return self.take_trace()

    def root_of(self, root):
        if self.role != "verifier" or root not in ("/tests", "/logs/verifier"):
            raise ValueError("no private folder %r in the %s session" % (root, self.role))
        return "/proc/%d/root%s" % (self.init_pid, root)

    def _ask_init(self, msg, answer, limit):
        ctl_send(self.ctl, msg)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and not self.ns_gone:
            select.select([self.ctl], [], [], 0.05)
            for reply in self._ctl_messages():
                if reply.get("op") == answer:
                    return reply
        raise RuntimeError("no %s from the %s namespace" % (answer, self.role))

    def prepare(self, declared, workdir):
        """The verifier's own root and its private /logs/verifier, made now (pristine.py)."""
        if self.role != "verifier":
            raise ValueError("only the verifier session gets a root of its own")
        reply = self._ask_init({"op": "prepare", "declared": declared, "workdir": workdir},
                               "prepared", 300)
        if reply.get("error"):
            raise RuntimeError("the verifier's root: %s" % reply["error"])
        return reply

    def check_private(self):
        """The verifier's private folders that are no longer the tmpfs mounted there."""
        return self._ask_init({"op": "check"}, "checked", 10).get("changed", [])

    def mount_private(self, root):
        """Ask the init for a fresh private tmpfs at ``root`` (the verifier's /tests, made
        only now so that the agent never even sees the folder)."""
        self.root_of(root)
        ctl_send(self.ctl, {"op": "mount", "path": root})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self.ns_gone:
            select.select([self.ctl], [], [], 0.05)
            for msg in self._ctl_messages():
                if msg.get("op") == "mounted":
                    if msg.get("error"):
                        raise RuntimeError(msg["error"])
                    return
        raise RuntimeError("no private %s in the %s namespace" % (root, self.role))

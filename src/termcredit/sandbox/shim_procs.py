"""The shim's process and stream helpers (see shim.py): bounded capture of a stream, a process's
descendants, killing without a race against fork, messages to a namespace init. Runs inside the
sandbox (its source is sent ahead of shim_session's). Stdlib only.
"""
import json
import os
import signal
import socket
import struct

TAIL_KEEP = 4096


class Capped:
    """Keeps the head and a short tail of a stream as it arrives; counts what it dropped."""

    def __init__(self, cap):
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, data):
        room = self.cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * TAIL_KEEP:
                cut = len(self.tail) - TAIL_KEEP
                self.dropped += cut
                del self.tail[:cut]

    def value(self):
        if len(self.tail) > TAIL_KEEP:
            self.dropped += len(self.tail) - TAIL_KEEP
            del self.tail[: len(self.tail) - TAIL_KEEP]
        if not self.dropped:
            return bytes(self.head + self.tail)
        note = b"\n[... termcredit: %d bytes of output omitted ...]\n" % self.dropped
        return bytes(self.head) + note + bytes(self.tail)


def children_map():
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                data = f.read()
        except OSError:
            continue
        ppid = int(data[data.rindex(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def descendants(root):
    kids, out, todo = children_map(), [], [root]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_pids(pids):
    for sig in (signal.SIGSTOP, signal.SIGKILL):  # stop first so nothing forks while we kill
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass


def ctl_send(sock, msg, fds=()):
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))] if fds else []
    sock.sendmsg([json.dumps(msg).encode()], anc)

"""Sandbox.diff (read on the host from the overlay2 layers) against Docker's own API diff, after
each step of what an agent does in a real container, hostile names and links included."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.docker

# each step runs in the agent's shell; the two diffs must agree after every one
STEPS = [
    ("fresh", "true"),
    ("create", "echo hi > /root/new.txt"),
    ("modify image file", "echo 'x:x:9:9::/:/bin/sh' >> /etc/passwd"),
    ("delete image file", "rm /etc/issue"),
    ("delete image dir", "rm -rf /usr/share/doc/bash"),
    ("mkdir -p nested", "mkdir -p /opt/a/b/c && touch /opt/a/b/c/f"),
    ("rename image file", "mv /etc/issue.net /etc/issue.net.bak"),
    ("rename image dir", "mv /usr/share/doc/apt /usr/share/doc/apt2"),
    ("chmod only", "chmod 600 /etc/shells"),
    ("chmod a dir and back", "chmod 700 /srv && chmod 755 /srv"),
    ("copy-up without change", ": >> /etc/login.defs"),
    ("hard link write", "ln /etc/host.conf /tmp/hl && echo '# x' >> /tmp/hl"),
    ("symlinks out", "ln -s /etc/passwd /tmp/pw && ln -s / /tmp/root && ln -s loop /tmp/loop"
                     " && rm -r /opt/a/b/c && ln -s / /opt/a/b/c && ln -s ../../../../../.. /tmp/up"),
    ("newline name", "touch \"/tmp/$(printf 'a\\nb')\" && mkdir \"/tmp/$(printf 'd\\n')\""),
    ("non-UTF-8 name", "touch \"/tmp/$(printf 'caf\\351')\""),
    ("dir emptied and remade (opaque)",
     "rm -rf /etc/apt/apt.conf.d && mkdir /etc/apt/apt.conf.d && echo x > /etc/apt/apt.conf.d/n"),
    ("file replaced by dir", "rm /etc/gai.conf && mkdir /etc/gai.conf && touch /etc/gai.conf/x"),
    ("dir replaced by file", "rm -rf /etc/cron.daily && echo f > /etc/cron.daily"),
    ("deleted then recreated", "cp -p /etc/motd /tmp/m && rm /etc/motd && cp -p /tmp/m /etc/motd"),
    ("replace merged-usr link", "rm /sbin && mkdir /sbin && touch /sbin/x"),
    ("many files", "mkdir /tmp/many && cd /tmp/many && seq 2000 | xargs touch && rm 1 2 3"),
    ("undo create", "rm -rf /root/new.txt /opt/a"),
]


def _api_names(changes: dict[str, int]) -> dict[str, int]:
    # Docker's JSON turns each undecodable byte into U+FFFD; ours keeps it (surrogateescape)
    return {os.fsencode(p).decode("utf-8", "replace"): k for p, k in changes.items()}


def test_host_walk_matches_docker_after_each_step(sandbox):
    sb = sandbox()
    assert sb._overlay_layers() is not None, "this engine should be local rootful overlay2"
    for name, command in STEPS:
        r = sb.run(command)
        assert r.exit_code == 0, (name, r.stderr)
        ours = sb.diff()
        theirs = {c["Path"]: c["Kind"] for c in sb.client.api.diff(sb.id)}
        assert _api_names(ours) == theirs, name
    assert ours["/tmp/a\nb"] == 1 and ours["/tmp/" + os.fsdecode(b"caf\xe9")] == 1
    assert "/tmp/root/etc" not in ours and ours["/tmp/pw"] == 1


def test_verifier_and_root_writes_match_too(sandbox):
    # writes the agent cannot make (Docker's own archive upload) land in the same upper dir
    sb = sandbox()
    sb.container.put_archive("/", _tar({"tests/test_x.py": b"ok\n", "etc/motd": b"new\n"}))
    ours = sb.diff()
    assert _api_names(ours) == {c["Path"]: c["Kind"] for c in sb.client.api.diff(sb.id)}
    assert ours["/tests/test_x.py"] == 1 and ours["/etc/motd"] == 0


def test_falls_back_to_the_api(sandbox):
    sb = sandbox()
    sb.run("touch /root/f")
    want = sb.api_diff()
    sb._layers = ("/nonexistent/upper", [])  # a remote engine's path: not on this host
    assert sb.diff() == want
    sb._layers = None  # not overlay2, rootless engine, or not root
    assert sb.diff() == want


def _tar(files: dict[str, bytes]) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()

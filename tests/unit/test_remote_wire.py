"""The Ray backend's wire, without Docker or Ray: what a host answers is checked on the driver
as strictly as the container's own bytes, errors come back as the sandbox layer's exceptions,
and task folders travel as reproducible archives."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from termcredit.harness.infra import is_infra_exception
from termcredit.sandbox import EngineError, ImageBuildError, ShellError
from termcredit.sandbox.container import SandboxSpec
from termcredit.sandbox.host_actor import HostActor, pack_dir, pull_image, unpack_env
from termcredit.sandbox.imagemap import ImageMap
from termcredit.sandbox.images import task_image_ref
from termcredit.sandbox.pool import StartTimeout
from termcredit.sandbox.remote import HostError, RemoteSandbox, check_frame, unwrap

SID = "ab" * 32
NONCES = {"agent": "0123456789abcdef", "verifier": "fedcba9876543210"}


def state(**over):
    st = {"id": SID, "workdir": "/app", "node": "n1", "nonces": dict(NONCES),
          "startup": {"agent": "startup-a\n", "verifier": "startup-v\n"},
          "agent": {"session_trace": ["startup-a\n", "start\n"], "integrity": [], "seq": 0,
                    "started": True}}
    st.update(over)
    return st


# ---------------------------------------------------------------- answers and errors
@pytest.mark.parametrize("kind,cls", [("shell", ShellError), ("start_timeout", StartTimeout),
                                      ("image", ImageBuildError), ("engine", EngineError),
                                      ("timeout", TimeoutError), ("martian", HostError)])
def test_error_kinds_come_back_as_the_sandbox_layers_exceptions(kind, cls):
    with pytest.raises(cls, match="host n1: boom"):
        unwrap({"error": [kind, "boom"]}, "host n1")


def test_a_lost_or_broken_host_is_an_infrastructure_failure():
    assert is_infra_exception(HostError("x")) and is_infra_exception(StartTimeout("x"))
    for bad in (None, [], {"ok": 1, "extra": 2}, {"error": "boom"}, {"error": [1, "x"]}):
        with pytest.raises(HostError, match="malformed answer"):
            unwrap(bad)
    assert unwrap({"ok": [1, 2]}) == [1, 2]


def test_host_methods_answer_errors_as_data(tmp_path):
    class DeadEngine:
        class containers:
            @staticmethod
            def list(**kw):
                raise ConnectionError("engine socket refused")

    host = HostActor("run-x", client=DeadEngine(), cache_dir=str(tmp_path))
    broken = host.info()["ok"]["broken"]  # info answers, naming the node and why
    assert broken.endswith("ConnectionError: engine socket refused")
    assert host.diff(SID) == {"error": ["engine", f"EngineError: {broken}"]}
    host = HostActor("run-x", client=FakeClient(set()), cache_dir=str(tmp_path))
    assert host.writable_bytes(SID) == {  # no such sandbox here
        "error": ["engine", f"EngineError: no sandbox {SID[:12]} on {host.node} (removed)"]}


# ---------------------------------------------------------------- forwarded frames
def test_frames_are_held_to_the_local_readers_limits():
    ok = check_frame({"header": {"op": "result", "blobs": [2, 0]}, "blobs": [b"hi", b""]},
                     max_blobs=3, max_total=10)
    assert ok.header["op"] == "result" and ok.blobs == [b"hi", b""]
    bad = [
        ({"header": {"blobs": [1, 1]}, "blobs": [b"a", b"b"]}, 1, 10),  # too many blobs
        ({"header": {"blobs": [11]}, "blobs": [b"x" * 11]}, 1, 10),  # too many bytes
        ({"header": {"blobs": [5]}, "blobs": [b"ab"]}, 1, 10),  # sizes do not match
        ({"header": {"blobs": [1]}, "blobs": ["a"]}, 1, 10),  # not bytes
        ({"header": {"pad": "x" * (1 << 20)}, "blobs": []}, 1, 10),  # header over 1 MiB
        ({"header": [], "blobs": []}, 1, 10),
    ]
    for frame, nb, nt in bad:
        with pytest.raises(HostError):
            check_frame(frame, max_blobs=nb, max_total=nt)
    with pytest.raises(ShellError, match="no such session"):
        check_frame({"header": {"op": "error", "error": "no such session"}, "blobs": []}, 1, 1)


@pytest.mark.parametrize("change", [
    {"id": "../../etc"}, {"id": SID[:-1]}, {"workdir": "app"},
    {"nonces": {"agent": "0123456789abcdef", "verifier": "0123456789abcdef"}},
    {"nonces": {"agent": "0123456789ABCDEF", "verifier": "fedcba9876543210"}},
    {"startup": {"agent": "other\n", "verifier": ""}},
    {"agent": {"session_trace": ["startup-a\n", "start\n"], "integrity": [], "seq": 3,
               "started": True}},
    {"agent": {"session_trace": ["startup-a\n", "start\n"], "integrity": "tampered",
               "seq": 0, "started": True}},
])
def test_a_hosts_start_up_state_is_checked_before_use(change):
    with pytest.raises(HostError):
        RemoteSandbox(lambda *a, **k: None, SandboxSpec(image="x"), state(**change))


def test_a_remote_shell_parses_and_checks_the_result_on_the_driver():
    """The host forwards the shim's frame; TracedShell (here, on the driver) makes the record
    and refuses a frame that is not this command's result."""
    sent = []

    def call(method, *args, timeout=None):
        sent.append((method, args))
        sid, req = args[0], args[1]
        assert method == "request" and sid == SID
        out, err, trace = b"hello\n", b"", b"trace line\n"
        seq = req["seq"] if answer_seq is None else answer_seq
        return {"header": {"op": "result", "seq": seq, "exit_code": 3, "duration_s": 0.5,
                           "timed_out": False, "shell_restarted": False, "cwd": "/app",
                           "blobs": [len(out), len(err), len(trace)]},
                "blobs": [out, err, trace]}

    answer_seq = None
    box = RemoteSandbox(call, SandboxSpec(image="x"), state())
    assert box.shell.session_trace == ["startup-a\n", "start\n"] and box.shell.started
    assert box.verifier_shell.nonce == NONCES["verifier"]
    rec = box.run("echo hello; exit 3", timeout=5)
    assert (rec.seq, rec.exit_code, rec.stdout, rec.trace, rec.cwd) == (
        1, 3, "hello\n", "trace line\n", "/app")
    assert sent[0][1][1]["cmd"] == "echo hello; exit 3" and sent[0][1][1]["s"] == "agent"
    assert box.shell.session_trace[-1] == "trace line\n"
    answer_seq = 1  # a replayed answer to the second command
    with pytest.raises(ShellError, match="not this command's result"):
        box.run("true")
    box.conn.close()
    with pytest.raises(ShellError, match="closed"):
        box.run("true")


def test_a_hosts_diff_and_sizes_are_checked():
    answers = {"diff": {"/app/a": 1, "/app": 0}, "writable_bytes": 42}
    box = RemoteSandbox(lambda m, *a, timeout=None: answers[m], SandboxSpec(image="x"), state())
    assert box.added_paths() == {"/app/a"} and box.writable_bytes() == 42
    answers.update(diff={"/app/a": 7}, writable_bytes=-1)
    with pytest.raises(HostError):
        box.diff()
    with pytest.raises(HostError):
        box.writable_bytes()


# ---------------------------------------------------------------- task folders and images
def make_env(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "Dockerfile").write_text("FROM termcredit/base\nCOPY sub /sub\n")
    (root / "sub" / "data.txt").write_text("42\n")
    return root


def test_a_task_folder_travels_reproducibly_and_keeps_its_image_tag(tmp_path):
    env = make_env(tmp_path / "env")
    data = pack_dir(env)
    (env / "sub" / "data.txt").touch()  # a new mtime: same content, same bytes
    assert pack_dir(env) == data
    copy = unpack_env(data, tmp_path / "cache")
    assert unpack_env(data, tmp_path / "cache") == copy  # cached by the archive's hash
    assert (copy / "sub" / "data.txt").read_text() == "42\n"
    imap = ImageMap({})
    assert task_image_ref(copy, "t", base_ref="termcredit/base:abc", image_map=imap) == \
        task_image_ref(env, "t", base_ref="termcredit/base:abc", image_map=imap)


def test_a_shipped_archive_cannot_escape_the_cache(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ("Dockerfile", "../escaped"):
            info = tarfile.TarInfo(name)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(tarfile.OutsideDestinationError):
        unpack_env(buf.getvalue(), tmp_path / "cache")
    assert not (tmp_path / "escaped").exists()


class FakeImages:
    """Enough of docker's client.images for the registry path."""

    def __init__(self, registry: set[str]):
        import docker.errors

        self.registry, self.local, self.pulled = registry, set(), []
        self.missing = docker.errors.ImageNotFound

    def get(self, ref):
        if ref not in self.local:
            raise self.missing(ref)
        return self._image(ref)

    def pull(self, repo, tag):
        self.pulled.append(f"{repo}:{tag}")
        if f"{repo}:{tag}" not in self.registry:
            raise RuntimeError("manifest unknown")
        return self._image(f"{repo}:{tag}")

    def _image(self, ref):
        images = self

        class Image:
            def tag(self, repo, tag):
                images.local.add(f"{repo}:{tag}")
        return Image()


class FakeClient:
    def __init__(self, registry):
        self.images = FakeImages(registry)
        self.api = self
        self.builds = []
        self.containers = self  # the host's start-up gc lists none

    def list(self, **kw):
        return []

    def build(self, **kw):
        self.builds.append(kw["tag"])
        self.images.local.add(kw["tag"])
        return iter([{"stream": "Step 1/1 : FROM termcredit/base"}])


def test_pull_image_tags_what_it_pulls_and_says_when_it_cannot():
    client, logs = FakeClient({"reg:5000/tc/termcredit/base:abc"}), []
    assert pull_image(client, "reg:5000/tc/", "termcredit/base:abc", logs.append)
    assert "termcredit/base:abc" in client.images.local
    assert not pull_image(client, "reg:5000/tc", "termcredit/task-x:def", logs.append)
    assert logs == ["pulled reg:5000/tc/termcredit/base:abc",
                    "cannot pull reg:5000/tc/termcredit/task-x:def (RuntimeError); building "
                    "it here"]


def test_a_node_pulls_task_images_from_the_registry_and_builds_only_what_is_missing(tmp_path):
    from termcredit.sandbox.bases import base_image_ref

    env = make_env(tmp_path / "env")
    data = pack_dir(env)
    ref, _ = task_image_ref(env, "t", base_ref=base_image_ref(), image_map=ImageMap({}))
    base = base_image_ref()
    client = FakeClient({f"reg/{ref}", f"reg/{base}"})
    host = HostActor("run-x", client=client, cache_dir=str(tmp_path / "cache"))
    assert host.broken is None and host.stale == []
    got = host.ensure_image("t", data, {}, {}, False, "reg")["ok"]
    assert got == {"ref": ref, "log": [f"pulled reg/{ref}"]} and client.builds == []

    other = make_env(tmp_path / "other")
    (other / "sub" / "data.txt").write_text("43\n")  # not in the registry: built here
    ref2, _ = task_image_ref(other, "t", base_ref=base, image_map=ImageMap({}))
    got = host.ensure_image("t", pack_dir(other), {}, {}, False, "reg")["ok"]
    assert got["ref"] == ref2 and client.builds == [ref2]
    assert f"pulled reg/{base}" in got["log"]  # the base came from the registry too
    assert f"reg/{ref2}" in client.images.pulled

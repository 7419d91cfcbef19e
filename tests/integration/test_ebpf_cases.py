"""Every one-session trace case of the parser's fixtures, on the eBPF backend and on strace (#33).

The cases (setup and commands) are those tests/fixtures/strace/record.py records; here they run
live on this host, once in a bash under the sandbox's strace flags and once in a bash followed
by the eBPF tracer, each case in a directory of its own between the sandbox's marker chdirs.
Each command's access summary, for the paths under its case directory, must be the same from
both traces. Runs where bpftrace can (root, tracefs); skipped with the reason elsewhere.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from termcredit.tracer.ebpf import EbpfTracer, available
from termcredit.tracer.ebpf_format import Converter, Records, split_records
from termcredit.tracer.ebpf_stream import StreamConverter
from termcredit.tracer.fsroot import FsRoot
from termcredit.tracer.protocol import strace_argv
from termcredit.tracer.session import summarize_segment

WHY = available()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"eBPF backend unavailable: {WHY}")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "strace"
_spec = importlib.util.spec_from_file_location("ebpf_cases_recorder", FIXTURES / "record.py")
assert _spec is not None and _spec.loader is not None
recorder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recorder)

# Sessions of several shells or timed background jobs: one shell per case cannot hold them.
MULTI = {"c30_background", "x_kill", "x_session", "x_shim_restart"}
NEEDS = {"c33_gcc": "gcc", "x_make_j": "make"}
NAMES = sorted(n for n in recorder.CASES if n not in MULTI
               and shutil.which(NEEDS.get(n, "bash")) is not None)
# temporary names made at random: compared as a placeholder
RANDOM = {"c08_sed_inplace": r"/sed[A-Za-z0-9]{6}$", "x_ln_sf": r"^/[A-Za-z0-9]{8}$"}
SETS = ("read", "written", "deleted", "temporary", "executed", "listed", "probed", "meta")


def _script(root: Path) -> tuple[str, dict[str, list[int]]]:
    """One bash script running every case in its own directory: (script, case -> seqs)."""
    parts, seqs, seq = [], {}, 1
    for name in NAMES:
        setup, commands = recorder.CASES[name]
        work = root / name
        work.mkdir(parents=True)
        recorder._setup(work, setup)
        parts.append(f"cd {work}\n" + recorder.script_for(commands, seq))
        seqs[name] = list(range(seq, seq + len(commands)))
        seq += len(commands)
    return "".join(parts), seqs


def _segment(text: str, seq: int) -> str:
    lines = text.split("\n")
    mark = f"/__termcredit__/{recorder.NONCE}/"
    first = next(i for i, line in enumerate(lines) if f'chdir("{mark}s{seq}")' in line)
    last = max(i for i, line in enumerate(lines) if f'chdir("{mark}e{seq}")' in line)
    return "\n".join(lines[first : last + 1]) + "\n"


def _sets(text: str, seq: int, work: Path, name: str) -> dict[str, object]:
    """The summary's sets (and derived_from) for the paths under ``work``, relative to it."""
    summary = summarize_segment(_segment(text, seq))
    prefix = str(work) + "/"

    def rel(p: str) -> str:
        return re.sub(RANDOM.get(name, "^$"), "/RANDOM", "/" + p[len(prefix):])

    out: dict[str, object] = {field: {rel(p) for p in getattr(summary, field)
                                      if p.startswith(prefix)} for field in SETS}
    out["derived_from"] = {rel(k): rel(v) for k, v in summary.derived_from.items()
                           if k.startswith(prefix)}
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out: dict[str, object] = {}
    for backend in ("strace", "ebpf"):
        root = tmp_path_factory.mktemp(backend)
        script, seqs = _script(root)
        env = dict(recorder.ENV)
        if backend == "strace":
            trace = root / "trace.txt"
            subprocess.run([*strace_argv("agent"), str(trace), "bash", "--norc", "--noprofile"],
                           input=script.encode(), cwd=root, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=300, check=False)
            text = trace.read_bytes().decode("ascii", "surrogateescape")
        else:
            proc = subprocess.Popen(["bash", "--norc", "--noprofile"], stdin=subprocess.PIPE,
                                    cwd=root, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            tracer = EbpfTracer(proc.pid)
            try:
                tracer.start()
                # bpftrace runs idle once attached: its wakeups never preempt the traced work
                assert tracer.proc is not None
                assert os.sched_getscheduler(tracer.proc.pid) == os.SCHED_IDLE
            finally:
                proc.communicate(script.encode(), timeout=300)
            result = tracer.stop()
            assert (result.lost, result.stray, result.unpaired) == (0, 0, 0)
            text = result.text
            out["ebpf raw"] = (tracer, bytes(tracer._out), result.lines)
        out[backend] = (root, seqs, text)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_case_summary_equals_strace(name: str, traces: dict[str, object]) -> None:
    got = {}
    for backend in ("strace", "ebpf"):
        root, seqs, text = traces[backend]  # type: ignore[misc]
        got[backend] = [_sets(text, seq, root / name, name) for seq in seqs[name]]
    assert got["ebpf"] == got["strace"]
    # and the case left something to compare: every case touches its directory
    assert any(any(s.values()) for s in got["ebpf"])


def test_streamed_lines_equal_the_batch_lines(traces: dict[str, object]) -> None:
    """The live session's records, replayed as they came out of bpftrace (in batches of 64,
    polled at the newest record's time), give the lines the batch conversion gives."""
    tracer, raw, batch = traces["ebpf raw"]  # type: ignore[misc]
    records = split_records(raw, tracer.nonce)
    # the traced bash is gone: its root was this process's, and its links are still there
    conv = StreamConverter(Converter(tracer.numbering, tracer.root_pid, tracer.cwd,
                                     tracer.epoch_ns, FsRoot.of(os.getpid())))
    lines: list[str] = []
    newest = 0
    for i in range(0, len(records.items), 64):
        part = Records(records.items[i : i + 64])
        newest = max([newest, *(int(nums[0]) for _, nums, _ in part.items if nums)])
        conv.feed(part)
        lines += conv.poll(now_ns=newest)
    lines += conv.finish()
    assert len(batch) > 1000  # the whole fixture session: every case's commands
    assert (lines, conv.late, conv.dropped_strings) == (batch, 0, 0)

"""Issue #22: the agent owns the traced shell, so it can forge markers. The tracer must not be
fooled where it can tell (end-marker tokens, shell adoption) and must record what it sees.

Synthetic traces use the sandbox's shape: bash issues every failing `cd` twice (logical mode
retries the verbatim name), the marker `cd`s redirect `2>/dev/null`, the EXIT trap reports
the cwd as `cd /__termcredit__/<NONCE>/cwd<PWD>`.
"""

from __future__ import annotations

import pytest
from tracer_testutil import FIXTURES, NONCE, load, rel

from termcredit.tracer import Marker, parse_session
from termcredit.tracer.protocol import parse_marker
from termcredit.tracer.segments import MAX_REASONS

TOK1, TOK2 = "0123456789abcdef", "fedcba9876543210"
FAKE = "deadbeefdeadbeef"


class T:
    """Builds strace text line by line with increasing timestamps."""

    def __init__(self, nonce: str = "ab") -> None:
        self.nonce, self.lines, self.ts = nonce, [], 1.0

    def add(self, pid: int, body: str) -> T:
        self.ts += 0.001
        self.lines.append(f"{pid} {self.ts:.6f} {body}\n")
        return self

    def cd(self, pid: int, name: str, *, twice: bool = True, nonce: str | None = None) -> T:
        path = f"/__termcredit__/{nonce or self.nonce}/{name}"
        for _ in range(2 if twice else 1):
            self.add(pid, f'chdir("{path}") = -1 ENOENT (No such file or directory)')
        return self

    def devnull(self, pid: int, cwd: str = "/w") -> T:  # a marker `cd`'s `2>/dev/null`
        return self.add(pid, f'openat(-100<{cwd}>, "/dev/null", 0x241, 0666) = 3</dev/null>')

    def write(self, pid: int, name: str, cwd: str = "/w") -> T:
        return self.add(pid, f'openat(-100<{cwd}>, "{name}", 0x241, 0666) = 3<{cwd}/{name}>')

    def fork(self, pid: int, child: int) -> T:
        return self.add(pid, f"clone(child_stack=NULL, flags=0x1200000|17) = {child}")

    def exit(self, pid: int, code: int = 0) -> T:
        return self.add(pid, f"+++ exited with {code} +++")

    def startup(self, pid: int) -> T:
        argv = '["bash", "--norc", "--noprofile"]'
        self.add(pid, f'execve("/usr/bin/bash", {argv}, 0x1 /* 3 vars */) = 0')
        self.add(pid, 'openat(-100</w>, "/etc/passwd", 0x80000) = 3</etc/passwd>')
        return self.devnull(pid)

    def step(self, pid: int, seq: int, *body: str, code: int = 0, token: str | None = None) -> T:
        """The sandbox's own bracket around one command (shell lines in `body`)."""
        self.cd(pid, f"s{seq}")
        for b in body:
            self.add(pid, b)
        self.devnull(pid)
        end = f"e{seq}.{code}" + (f".{token}" if token else "")
        return self.cd(pid, end)

    @property
    def text(self) -> str:
        return "".join(self.lines)


def W(name: str, cwd: str = "/w") -> str:
    return f'openat(-100<{cwd}>, "{name}", 0x241, 0666) = 3<{cwd}/{name}>'


# ---------------------------------------------------------------- marker grammar


def test_parse_marker_old_and_new_end_markers() -> None:
    assert parse_marker(f"/__termcredit__/ab/e3.0.{TOK1}") == ("ab", False, 3, 0, TOK1)
    assert parse_marker("/__termcredit__/ab/e3.1") == ("ab", False, 3, 1, None)
    assert parse_marker("/__termcredit__/ab/e3") == ("ab", False, 3, None, None)
    assert parse_marker("/__termcredit__/ab/s3") == ("ab", True, 3, None, None)
    assert parse_marker(f"/__termcredit__/ab/e3.-1.{TOK1}/") == ("ab", False, 3, -1, TOK1)
    m = parse_marker(f"/__termcredit__/ab/e3.0.{TOK1}")
    assert m is not None and m.token == TOK1 and m.exit_code == 0 and not m.start
    for bad in ("e3.0.xyz", "e3..abc", "e3.0.", "x3", "cwd/w", "s"):
        assert parse_marker(f"/__termcredit__/ab/{bad}") is None, bad


def test_token_is_on_the_marker_and_an_honest_session_is_clean() -> None:
    t = T().startup(10).step(10, 1, W("f"), token=TOK1).devnull(10).step(10, 2, code=1, token=TOK2)
    t.devnull(10).cd(10, "cwd/w").exit(10)
    trace = parse_session(t.text, "ab", tokens={1: TOK1, 2: TOK2})
    assert trace.integrity == {} and not trace.flagged
    assert [m.token for m in trace.markers if not m.start] == [TOK1, TOK1, TOK2, TOK2]
    end = trace.markers[2]
    assert end == Marker(1, False, 10, end.ts, end.line_no, 0, TOK1)
    assert end.name == f"e1.0.{TOK1}"
    assert [trace.commands[i].exit_code for i in (1, 2)] == [0, 1]
    assert rel(trace.summary(1).written) == {"f"}
    # without tokens, the new form parses the same
    assert parse_session(t.text, "ab").integrity == {}


def test_old_form_still_accepted_when_tokens_are_not_checked() -> None:
    t = T().startup(10).step(10, 1, W("f")).devnull(10).step(10, 2)
    assert parse_session(t.text, "ab").integrity == {}
    assert parse_session(t.text, "ab", tokens={1: "", 2: ""}).integrity == {}  # tokens unknown


# ---------------------------------------------------------------- forged end markers


def test_forged_end_marker_with_wrong_token_does_not_close_the_step() -> None:
    t = T().startup(10).cd(10, "s1").add(10, W("a"))
    t.cd(10, f"e1.0.{FAKE}")  # the agent's `cd` to a marker it made up
    t.add(10, W("b"))  # ... so that this would look like activity between steps
    t.devnull(10).cd(10, f"e1.0.{TOK1}")
    trace = parse_session(t.text, "ab", tokens={1: TOK1})
    assert trace.integrity == {1: [f"forged end marker e1.0.{FAKE} (wrong token)"]}
    assert trace.flagged
    assert rel(trace.summary(1).written) == {"a", "b"}
    assert [m.token for m in trace.markers if not m.start] == [TOK1, TOK1]  # forged: not kept
    assert trace.commands[1].end_ts == trace.markers[-1].ts


def test_forged_end_marker_without_token_and_for_a_step_never_run() -> None:
    t = T().startup(10).cd(10, "s1").cd(10, "e1.0").cd(10, f"e7.0.{TOK1}").add(10, W("a"))
    t.devnull(10).cd(10, f"e1.0.{TOK1}")
    trace = parse_session(t.text, "ab", tokens={1: TOK1})
    assert trace.integrity == {1: ["forged end marker e1.0 (no token)",
                                   f"forged end marker e7.0.{TOK1} (no step 7 was run)"]}
    assert rel(trace.summary(1).written) == {"a"} and 7 not in trace.commands


def test_without_tokens_a_forged_end_marker_still_shows() -> None:
    """Old recordings: the fake closes the segment, but what follows is shell activity outside
    any step, and the real end marker then closes nothing."""
    t = T().startup(10).cd(10, "s1").cd(10, "e1.0").add(10, W("a")).devnull(10).cd(10, "e1.0")
    trace = parse_session(t.text, "ab")
    assert trace.integrity == {1: ["shell activity outside any step: trunc /w/a",
                                   "duplicate end marker e1.0"]}


# ---------------------------------------------------------------- whose marker


def test_marker_from_a_commands_process_is_ignored_and_recorded() -> None:
    t = T().startup(10).cd(10, "s1").fork(10, 11)
    t.cd(11, "s9").cd(11, f"e1.0.{TOK1}").add(11, W("x"))
    t.devnull(10).cd(10, f"e1.0.{TOK1}")
    trace = parse_session(t.text, "ab", tokens={1: TOK1})
    assert list(trace.commands) == [1] and trace.shell_pids == [10]
    assert rel(trace.summary(1).written) == {"x"}
    assert trace.integrity == {1: ["marker s9 from pid 11, not the shell",
                                   f"marker e1.0.{TOK1} from pid 11, not the shell"]}


def test_background_job_of_a_dead_shell_cannot_become_the_shell() -> None:
    """The shell exits in step 1 (`exit`); its background job, still alive, knows the nonce."""
    t = T().startup(10).cd(10, "s1").fork(10, 11).exit(10, 0)
    t.cd(11, "s2").add(11, W("late"))
    trace = parse_session(t.text, "ab")
    assert trace.shell_pids == [10] and list(trace.commands) == [1]
    assert rel(trace.summary(1).written) == {"late"}
    assert trace.integrity == {1: ["marker s2 from pid 11, not the shell"]}


def test_background_job_of_an_old_shell_cannot_hijack_the_restarted_one() -> None:
    t = T().startup(10).cd(10, "s1").fork(10, 11).add(10, "exit_group(0) = ?").exit(10, 0)
    t.startup(20).cd(20, "s2").add(20, W("mine"))
    t.cd(11, "s3").add(11, W("bg"))  # would have taken over segmentation before
    t.devnull(20).cd(20, "e2.0")
    trace = parse_session(t.text, "ab")
    assert trace.shell_pids == [10, 20] and list(trace.commands) == [1, 2]
    assert rel(trace.summary(1).written) == {"bg"} and rel(trace.summary(2).written) == {"mine"}
    assert trace.integrity == {1: ["marker s3 from pid 11, not the shell"]}


def test_restart_after_sigkill_without_exit_line_is_honest() -> None:
    """A timed-out shell killed by the sandbox prints no `+++` line under -e signal=none; the
    new strace + bash is a new root process and becomes the shell."""
    t = T().startup(10).cd(10, "s1").add(10, W("a"))  # killed here, segment 1 never closes
    t.startup(20).step(20, 2, W("b"), token=TOK2)
    trace = parse_session(t.text, "ab", tokens={1: TOK1, 2: TOK2})
    assert trace.shell_pids == [10, 20] and trace.integrity == {}
    assert trace.commands[1].end_ts is None and rel(trace.summary(2).written) == {"b"}


def test_shell_restarted_by_the_namespace_init_is_adopted() -> None:
    """#32: the sandbox's namespace init (pid 5) forks each bash; after `exit` it forks a
    new one, a sibling of the old shell: that shell is adopted, with no finding."""
    t = T().fork(5, 10).startup(10).step(10, 1, W("a"), code=3, token=TOK1).exit(10, 3)
    t.fork(5, 20).startup(20).step(20, 2, W("b"), token=TOK2)
    trace = parse_session(t.text, "ab", tokens={1: TOK1, 2: TOK2})
    assert trace.shell_pids == [10, 20] and trace.integrity == {}
    assert rel(trace.summary(1).written) == {"a"} and rel(trace.summary(2).written) == {"b"}


def test_child_of_a_dead_shells_job_is_no_sibling() -> None:
    """A process the old shell's job forked is a descendant, not a sibling: never adopted."""
    t = T().fork(5, 10).startup(10).cd(10, "s1").fork(10, 11).exit(10, 0)
    t.fork(11, 12).cd(12, "s2").add(12, W("bg"))
    trace = parse_session(t.text, "ab")
    assert trace.shell_pids == [10]
    assert trace.integrity == {1: ["marker s2 from pid 12, not the shell"]}


def test_pid_namespace_child_cannot_take_over_a_live_shell() -> None:
    """`unshare --pid --fork sh -c ...`: inside the namespace, clone returns the namespace's
    pid (2), so strace's pid for the child matches no clone: it looks like a root process,
    like a restarted shell. While the shell lives, it does not take over."""
    t = T().startup(10).cd(10, "s1").fork(10, 11)
    argv = '["unshare", "--pid", "--fork", "sh"]'
    t.add(11, f'execve("/usr/bin/unshare", {argv}, 0x1 /* 3 vars */) = 0')
    t.fork(11, 12).fork(12, 2)
    t.cd(16801, "s2").add(16801, W("x"))
    t.devnull(10).cd(10, "e1.0").devnull(10).step(10, 2, W("y"))
    trace = parse_session(t.text, "ab")
    assert trace.shell_pids == [10] and list(trace.commands) == [1, 2]
    assert rel(trace.summary(1).written) == {"x"} and rel(trace.summary(2).written) == {"y"}
    assert trace.integrity == {1: ["marker s2 from pid 16801, not the shell"]}


def test_a_killed_shell_seen_again_was_not_dead() -> None:
    t = T().startup(10).cd(10, "s1").add(10, W("a"))
    t.startup(20).cd(20, "s2").add(10, W("b")).devnull(10).cd(10, "e1.0")
    trace = parse_session(t.text, "ab")
    assert trace.shell_pids == [10] and rel(trace.summary(1).written) == {"a", "b"}
    assert trace.integrity == {1: ["marker s2 from pid 20, not the shell"]}


def test_a_killed_shells_pid_reused_later_is_not_the_shell() -> None:
    t = T().startup(10).cd(10, "s1").add(10, W("a"))  # killed: no exit line
    t.startup(20).cd(20, "s2").fork(20, 10).add(10, W("b")).devnull(20).cd(20, "e2.0")
    trace = parse_session(t.text, "ab")
    assert trace.shell_pids == [10, 20] and trace.integrity == {}
    assert rel(trace.summary(2).written) == {"b"}


def test_a_root_process_older_than_the_shell_cannot_take_over() -> None:
    """The wrapper shape (`sh` starts the shell): the wrapper is a root process, but it was
    there before the shell's markers, so it is not a restarted shell."""
    t = T().add(1, 'execve("/usr/bin/sh", ["sh"], 0x1 /* 1 vars */) = 0').fork(1, 2)
    t.startup(2).cd(2, "s1").cd(1, "s2").add(2, W("a")).devnull(2).cd(2, "e1.0")
    trace = parse_session(t.text, "ab")
    assert trace.shell_pids == [2] and list(trace.commands) == [1]
    assert trace.integrity == {None: ["marker s2 from pid 1, not the shell"]}


def test_foreign_nonce_and_unrecognised_marker_paths() -> None:
    t = T().startup(10).cd(10, "s1").cd(10, "s5", nonce="ffff").cd(10, "x1").cd(10, "e1.0.zz")
    t.fork(10, 11).cd(11, "cwd/tmp")  # only the shell's EXIT trap reports the cwd
    t.devnull(10).cd(10, "e1.0").devnull(10).cd(10, "cwd/w").exit(10)
    trace = parse_session(t.text, "ab")
    assert trace.integrity == {1: [
        "marker s5 with foreign nonce ffff from pid 10",
        "unrecognised marker path '/__termcredit__/ab/x1' from pid 10",
        "unrecognised marker path '/__termcredit__/ab/e1.0.zz' from pid 10",
        "unrecognised marker path '/__termcredit__/ab/cwd/tmp' from pid 11",
    ]}


# ---------------------------------------------------------------- marker order


def test_duplicate_start_and_start_while_a_step_is_open() -> None:
    t = T().startup(10).step(10, 1).devnull(10).cd(10, "s1")  # s1 again, after e1
    t.devnull(10).cd(10, "e1.0").devnull(10)
    t.cd(10, "s2").add(10, W("a")).cd(10, "s3")  # s3 while 2 is open
    t.devnull(10).cd(10, "e3.0")
    trace = parse_session(t.text, "ab")
    assert trace.integrity == {
        1: ["duplicate start marker s1", "duplicate end marker e1.0"],
        2: ["start marker s3 while step 2 is open"],
    }


def test_end_marker_for_a_step_that_is_not_open() -> None:
    t = T().startup(10).step(10, 1).devnull(10).cd(10, "e5.0")  # between steps
    t.devnull(10).cd(10, "s2").cd(10, "e4.0")  # while 2 is open
    t.devnull(10).cd(10, "e2.0")
    trace = parse_session(t.text, "ab")
    assert trace.integrity == {1: ["end marker e5.0 outside any step"],
                               2: ["end marker e4.0 while step 2 is open"]}
    assert trace.commands[2].end_ts is not None


def test_single_cd_calls_are_fine_too() -> None:
    """`set -P` (physical mode) makes bash try each `cd` once: not a protocol violation."""
    t = T().startup(10).cd(10, "s1", twice=False).add(10, W("a")).devnull(10)
    t.cd(10, "e1.0", twice=False).devnull(10).cd(10, "s2", twice=False).devnull(10)
    t.cd(10, "e2.0", twice=False)
    assert parse_session(t.text, "ab").integrity == {}


# ---------------------------------------------------------------- between steps


def test_shell_activity_between_steps_is_recorded() -> None:
    t = T().startup(10).step(10, 1)
    t.add(10, W("x"))  # e.g. a DEBUG trap the agent set in step 1
    t.fork(10, 12).add(12, W("y"))
    t.add(10, 'chdir("/tmp") = 0').add(10, "fchdir(3</w/sub>) = 0")
    t.devnull(10).step(10, 2)
    trace = parse_session(t.text, "ab")
    assert trace.integrity == {1: ["shell activity outside any step: trunc /w/x",
                                   "shell activity outside any step: forked pid 12",
                                   "shell activity outside any step: chdir /tmp",
                                   "shell activity outside any step: fchdir /w/sub"]}
    assert rel({e.path for e in trace.unattributed}) == {"x", "y"}


def test_honest_gaps_between_steps() -> None:
    """Startup before the first marker, the marker redirections, the EXIT trap's cwd report,
    a background job from step 1 writing later, and a restarted shell's startup."""
    t = T().startup(10).cd(10, "s1").fork(10, 11).devnull(10).cd(10, "e1.0")
    t.add(11, W("bg1"))  # step 1's job, between steps
    t.devnull(10).step(10, 2).add(11, W("bg2"))
    t.devnull(10).cd(10, "cwd/w").exit(10, 0)
    t.startup(20).step(20, 3, W("c")).add(11, W("bg3"))
    trace = parse_session(t.text, "ab")
    assert trace.integrity == {}
    assert rel(trace.summary(1).written) == {"bg1", "bg2", "bg3"}


def test_reasons_of_a_step_never_run_are_session_level_when_tokens_are_known() -> None:
    """A forged `s99` the shell accepts opens a step the host never ran: with tokens known,
    what is blamed on it goes to the session (callers look reasons up by the steps they ran)."""
    t = T().startup(10).cd(10, "s1").cd(10, "s99").devnull(10).cd(10, "e99.0").add(10, W("x"))
    t.devnull(10).cd(10, f"e1.0.{TOK1}")
    with_tokens = parse_session(t.text, "ab", tokens={1: TOK1})
    assert with_tokens.integrity == {
        1: ["start marker s99 while step 1 is open"],
        None: ["forged end marker e99.0 (no step 99 was run)",
               f"end marker e1.0.{TOK1} while step 99 is open"],
    }
    without = parse_session(t.text, "ab")
    assert without.integrity == {
        1: ["start marker s99 while step 1 is open"],
        99: ["shell activity outside any step: trunc /w/x",
             f"end marker e1.0.{TOK1} outside any step"],
    }


def test_long_reasons_are_cut() -> None:
    t = T().startup(10).step(10, 1).add(10, W("x" * 1000))
    (reason,) = parse_session(t.text, "ab").integrity[1]
    assert len(reason) == 300 and reason.endswith("...")


def test_too_many_reasons_are_capped() -> None:
    t = T().startup(10).step(10, 1)
    for i in range(3 * MAX_REASONS):
        t.add(10, W(f"f{i}"))
    reasons = parse_session(t.text, "ab").integrity[1]
    assert len(reasons) == MAX_REASONS + 1 and reasons[-1] == "(further reasons omitted)"


# ---------------------------------------------------------------- the text itself


def test_malformed_lines_are_a_session_level_reason() -> None:
    t = T().startup(10).step(10, 1)
    text = t.text + "not a trace line\n10 2.0 chdir(\n"
    trace = parse_session(text, "ab")
    assert trace.stats.skipped == 2
    assert trace.integrity == {None: ["2 malformed trace lines skipped"]}
    one = parse_session(t.text + "garbage\n", "ab")
    assert one.integrity == {None: ["1 malformed trace line skipped"]}


# ---------------------------------------------------------------- recorded traces

FIXTURE_REASONS = {
    # command 4 is `cd /__termcredit__/deadbeef/s99; echo z > z`
    "x_session": {4: ["marker s99 with foreign nonce deadbeef from pid 30836"]},
}


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.strace")))
def test_recorded_traces_have_no_integrity_reasons(name: str) -> None:
    trace = parse_session(load(name), NONCE)
    assert trace.integrity == FIXTURE_REASONS.get(name, {})
    assert parse_session(load(name)).integrity == FIXTURE_REASONS.get(name, {})


def test_recorded_restart_with_tokens_of_the_old_form() -> None:
    """Recorded end markers have no token: with tokens unknown ("") they are accepted."""
    trace = parse_session(load("x_shim_restart"), NONCE, tokens={i: "" for i in range(1, 6)})
    assert trace.integrity == {} and len(trace.shell_pids) == 2
    forged = parse_session(load("x_shim_restart"), NONCE, tokens={i: TOK1 for i in range(1, 6)})
    assert forged.integrity[1] == ["forged end marker e1.0 (no token)",
                                   "start marker s2 while step 1 is open"]
    assert forged.commands[1].end_ts is None

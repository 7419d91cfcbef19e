"""`refine.select.decide` on hand-built traced trajectories: which steps the dependency graph
proves droppable. Every expectation is read off the trajectory by hand (see each test)."""

from __future__ import annotations

import hashlib

from termcredit.depgpo.load import facts_from_trajectory
from termcredit.records import (CommandRecord, FileState, Step, TraceCwd, Trajectory,
                                VerifierReport)
from termcredit.refine import RefineOptions, decide, refined_commands
from termcredit.refine.select import backgrounds
from termcredit.tracer import AccessSummary

INSTRUCTION = "The file /app/data.csv lists items and prices. Write the dearest item to " \
              "/app/answer.txt (it is gamma)."


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def step(i: int, command: str, *, read: tuple[str, ...] = (), write: dict[str, str] | None = None,
         dirs: tuple[str, ...] = (), deleted: tuple[str, ...] = (), listed: tuple[str, ...] = (),
         stdout: str = "", shell: dict[str, str] | None = None, cwd: str = "/app",
         cwd_after: str | None = None, cwd_used: tuple[str, ...] = ()) -> Step:
    """A traced step: accesses, content check of what it wrote, shell changes, cwd facts."""
    write = write or {}
    files = [FileState(path=p, kind="file", size=len(t), sha256=_sha(t), text=True, content=t)
             for p, t in write.items()]
    files += [FileState(path=d, kind="dir", sha256=_sha("dir:" + d)) for d in dirs]
    acc = AccessSummary(read=set(read), written=set(write) | set(dirs), deleted=set(deleted),
                        listed=set(listed))
    rec = CommandRecord(command=command, stdout=stdout, stderr="", exit_code=0, duration_s=0.0,
                        seq=i, accesses=acc, files=files, shell=shell or {},
                        trace_cwd=TraceCwd(cwd, cwd_after or cwd, list(cwd_used)))
    return Step(index=i, action=command, command=rec)


def done(i: int) -> Step:
    return Step(index=i, action="done", action_key="<done>")


def traj(steps: list[Step], resources: tuple[str, ...] = ("/app/answer.txt",)) -> Trajectory:
    return Trajectory(task="t", instruction=INSTRUCTION, agent="x", steps=steps,
                      verifier=VerifierReport(reward=1.0, resources=list(resources)))


def kept(t: Trajectory, **opts) -> list[bool]:
    return [d.keep for d in decide(t, facts_from_trajectory(t), RefineOptions(**opts))]


ANSWER = step(9, "tail -n 1 /tmp/sorted.csv | cut -d, -f1 > /app/answer.txt",
              read=("/tmp/sorted.csv",), write={"/app/answer.txt": "gamma\n"})
SORT = step(8, "sort -t, -k2 -n /app/data.csv > /tmp/sorted.csv", read=("/app/data.csv",),
            write={"/tmp/sorted.csv": "alpha,3\ngamma,42\n"})


def test_distractors_are_dropped_and_the_chain_kept() -> None:
    # 0 looks around (its listing reused by nobody kept), 1 writes a file nothing reads, 2 sets
    # a variable nobody expands, 3 reads a file whose text no later command uses; 4 and 5 are
    # the chain (5 reads 4's file, the verifier reads 5's): drop exactly 0-3
    t = traj([step(0, "find /app -maxdepth 1 -type f", listed=("/app",),
                   stdout="/app/data.csv\n/app/notes.txt\n"),
              step(1, "echo checking > /tmp/debug.log", write={"/tmp/debug.log": "checking\n"}),
              step(2, "note=unused", shell={"note": "var:abc"}),
              step(3, "cat /app/notes.txt", read=("/app/notes.txt",), stdout="water plants\n"),
              SORT, ANSWER, done(6)])
    assert kept(t) == [False, False, False, False, True, True, True]
    assert refined_commands(decide(t, facts_from_trajectory(t))) == [SORT.command.command,
                                                                     ANSWER.command.command]


def test_a_step_whose_output_is_reused_is_kept() -> None:
    # 0 prints a hash that 1 copies into a file that lasts (kept with --keep-writes, credit 0:
    # the verifier never reads it): the stdout-reuse edge 0 -> 1 keeps 0 although its credit is 0
    t = traj([step(0, "md5sum /app/data.csv | cut -c1-12", read=("/app/data.csv",),
                   stdout="9f3b2a7c41de\n"),
              step(1, "echo 9f3b2a7c41de > /tmp/sum.txt", write={"/tmp/sum.txt": "9f3b2a7c41de\n"}),
              SORT, ANSWER])
    ds = decide(t, facts_from_trajectory(t), RefineOptions(keep_writes=True))
    assert [d.keep for d in ds] == [True, True, True, True]
    assert ds[0].credit == 0 and ds[0].why == "feeds step 1 (stdout reused)"
    # without --keep-writes the consumer goes, and with it the edge: both dropped
    assert kept(t) == [False, False, True, True]


def test_a_reused_value_feeding_the_answer_is_kept_with_credit() -> None:
    # 0's stdout shows 42, new to the agent; 1 writes it into the answer: 0 is a supporting read
    t = traj([step(0, "sort -t, -k2 -n /app/data.csv | tail -n 1", read=("/app/data.csv",),
                   stdout="gamma,42\n"),
              step(1, "echo 42 > /app/answer.txt", write={"/app/answer.txt": "42\n"})])
    ds = decide(t, facts_from_trajectory(t))
    assert [d.keep for d in ds] == [True, True] and ds[0].credit > 0


def test_the_mkdir_the_answer_needs_is_kept() -> None:
    # the answer lives in the directory step 0 made; step 2's mkdir makes one nobody uses
    t = traj([step(0, "mkdir -p /app/out", dirs=("/app/out",)),
              step(1, "echo gamma > /app/out/answer.txt", write={"/app/out/answer.txt": "gamma\n"}),
              step(2, "mkdir -p /tmp/scratch", dirs=("/tmp/scratch",))],
             resources=("/app/out/answer.txt",))
    assert kept(t) == [True, True, False]


def test_a_mkdir_a_kept_later_write_goes_into_is_kept_without_credit() -> None:
    # /tmp/w/f lasts (kept with --keep-writes); nothing the verifier read is under /tmp/w, so
    # the mkdir has credit 0, but a kept command wrote inside it
    t = traj([step(0, "mkdir /tmp/w", dirs=("/tmp/w",)),
              step(1, "echo x > /tmp/w/f", write={"/tmp/w/f": "x\n"}), SORT, ANSWER])
    ds = decide(t, facts_from_trajectory(t), RefineOptions(keep_writes=True))
    assert [d.keep for d in ds] == [True, True, True, True]
    assert ds[0].credit == 0 and ds[0].why == "step 1 touches /tmp/w"


def test_a_cd_later_commands_rely_on_is_kept_and_an_unused_one_dropped() -> None:
    # 0 moves the shell to /tmp, where 1 resolves the relative sorted.csv; 3 moves it to /srv
    # and nothing resolves a relative path there afterwards
    t = traj([step(0, "cd /tmp", cwd="/app", cwd_after="/tmp"),
              step(1, "sort -t, -k2 -n /app/data.csv > sorted.csv", cwd="/tmp",
                   read=("/app/data.csv",), write={"/tmp/sorted.csv": "gamma,42\n"},
                   cwd_used=("/tmp",)),
              step(2, "cut -d, -f1 /tmp/sorted.csv > /app/answer.txt", cwd="/tmp",
                   read=("/tmp/sorted.csv",), write={"/app/answer.txt": "gamma\n"}),
              step(3, "cd /srv", cwd="/tmp", cwd_after="/srv")])
    assert kept(t) == [True, True, True, False]


def test_shell_state_later_commands_use_is_kept() -> None:
    # 0 sets f, which 1 expands; 2 exports X (a child may read it unseen): kept while anything
    # runs after it; 3 sets y, used by nobody
    t = traj([step(0, "f=/app/data.csv", shell={"f": "var:1"}),
              step(1, 'sort -t, -k2 -n "$f" > /tmp/sorted.csv', read=("/app/data.csv",),
                   write={"/tmp/sorted.csv": "gamma,42\n"}),
              step(2, "export X=1", shell={"X": "export:2"}),
              step(3, "y=2", shell={"y": "var:3"}),
              ANSWER])
    assert kept(t) == [True, True, True, False, True]


def test_deletions_background_jobs_and_verifier_listings_keep_a_step() -> None:
    # 0 deletes a file that existed, where the verifier never looks (state lost for good); 1 starts a background job; 2 writes
    # into /app, which the verifier listed; 3 writes where nobody looks
    t = traj([step(0, "rm /srv/old.txt", deleted=("/srv/old.txt",)),
              step(1, "sleep 100 &"),
              step(2, "echo x > /app/extra.txt", write={"/app/extra.txt": "x\n"}),
              step(3, "echo x > /tmp/extra.txt", write={"/tmp/extra.txt": "x\n"}),
              SORT, ANSWER])
    t.trial_dir = None
    facts = facts_from_trajectory(t)
    facts.listed = ["/app"]
    ds = decide(t, facts)
    assert [d.keep for d in ds] == [True, True, True, False, True, True]
    assert ds[0].why == "deletes /srv/old.txt" and ds[0].credit == 0
    assert ds[1].why == "starts a background job"
    assert ds[2].why == "the verifier listed /app"


def test_invalid_steps_are_dropped_done_is_kept() -> None:
    t = traj([Step(index=0, action="```bash\n```", invalid=True), SORT, ANSWER, done(3)])
    assert kept(t) == [False, True, True, True]


def test_keep_reads_keeps_a_look_whose_output_the_next_command_uses() -> None:
    # gamma is in the instruction, so there is no stdout-reuse edge: by default the look goes;
    # with --keep-reads it stays (its output holds gamma, which the next command's text has)
    t = traj([step(0, "cat /app/data.csv", read=("/app/data.csv",), stdout="alpha,3\ngamma,42\n"),
              step(1, "echo gamma > /app/answer.txt", write={"/app/answer.txt": "gamma\n"})])
    assert kept(t) == [False, True]
    assert kept(t, keep_reads=True) == [True, True]


def test_min_credit_zero_keeps_every_command() -> None:
    t = traj([step(0, "echo checking > /tmp/debug.log", write={"/tmp/debug.log": "c\n"}),
              SORT, ANSWER])
    assert kept(t, min_credit=0.0) == [True, True, True]
    assert kept(t, min_credit=0.5) == [False, True, True]


def test_background_detection_reads_the_grammar() -> None:
    assert backgrounds("python -m http.server 8000 &")
    assert not backgrounds("a && b")
    assert not backgrounds("echo x &> /tmp/log")
    assert not backgrounds("echo 'a & b'")

"""A session trace over the parse cap: steps keep their own segment's accesses, and the episode
records that its trace was not checked as a whole (so a flood cannot hide tampering)."""

from termcredit.harness import observe
from termcredit.records import CommandRecord


class _Shell:
    nonce = "ab"

    def snapshot(self, paths, content_cap):
        return []


SEGMENT = (
    '10    1.0 chdir("/__termcredit__/ab/s1") = -1 ENOENT (No such file or directory)\n'
    '11    1.1 openat(-100</w>, "/w/out", 0x241, 0666) = 3</w/out>\n'
    '10    1.2 chdir("/__termcredit__/ab/e1.0") = -1 ENOENT (No such file or directory)\n'
)


def test_over_the_cap_steps_keep_their_segment_and_the_episode_is_told(monkeypatch):
    obs = observe.StepObserver(_Shell())
    rec = CommandRecord(command="echo x > /w/out", stdout="", stderr="", exit_code=0,
                        duration_s=0.1, seq=1, trace=SEGMENT)
    obs.after_step(rec)
    assert rec.accesses is not None and rec.accesses.written == {"/w/out"}
    monkeypatch.setattr(observe, "SESSION_PARSE_CAP", len(SEGMENT) - 1)
    reasons = obs.finalize([rec], SEGMENT)
    assert reasons == [f"session trace of 0 MiB not parsed as a whole (cap 0 MiB): "
                       "per-step accesses only"]
    assert rec.accesses.written == {"/w/out"}
    monkeypatch.setattr(observe, "SESSION_PARSE_CAP", len(SEGMENT))
    assert obs.finalize([rec], SEGMENT) == []  # at the cap: parsed as a whole, nothing to say

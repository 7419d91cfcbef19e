from termcredit.records import (CommandRecord, Step, Trajectory, VerifierReport, from_dict,
                                load_json, save_json, to_dict)
from termcredit.tracer import AccessSummary


def test_trajectory_round_trip_drops_raw_trace(tmp_path):
    rec = CommandRecord(command="ls", stdout="a\n", stderr="", exit_code=0, duration_s=0.01,
                        trace="123 1.0 execve(...) = 0\n", trace_file="trace/step-000.strace")
    traj = Trajectory(task="t", instruction="do", agent="replay", steps=[Step(0, "ls", rec)],
                      verifier=VerifierReport(reward=1.0, rewards={"reward": 1.0}))
    save_json(traj, tmp_path / "trajectory.json")
    back = load_json(Trajectory, tmp_path / "trajectory.json")
    assert back.steps[0].command.stdout == "a\n"
    assert back.steps[0].command.trace == ""  # traces live in trace/, not in the JSON
    assert back.steps[0].command.trace_file == "trace/step-000.strace"
    assert back.verifier.reward == 1.0
    assert to_dict(back) == to_dict(traj)


def test_from_dict_ignores_unknown_keys():
    rec = from_dict(CommandRecord, {"command": "x", "stdout": "", "stderr": "", "exit_code": 1,
                                    "duration_s": 0.0, "future_field": 3})
    assert rec.exit_code == 1


def test_accesses_are_the_tracer_summary_and_keep_their_json_shape(tmp_path):
    acc = AccessSummary(read={"/app/b", "/app/a"}, written={"/app/out"}, deleted={"/tmp/x"},
                        temporary={"/tmp/t"}, executed={"/usr/bin/env"}, listed={"/app"},
                        probed={"/app/missing"}, meta={"/app/run.sh"},
                        derived_from={"/app/out": "/app/a"}, statted={"/app/a"}, events=7)
    acc.environment.read, acc.environment.written = {"/usr/lib/x.so"}, {"/root/.cache/c"}
    rec = CommandRecord(command="x", stdout="", stderr="", exit_code=0, duration_s=0.0,
                        accesses=acc)
    data = to_dict(rec)["accesses"]
    assert list(data) == ["read", "written", "deleted", "temporary", "executed", "listed",
                          "probed", "meta", "derived_from", "env_read", "env_written"]
    assert data["read"] == ["/app/a", "/app/b"] and data["env_written"] == ["/root/.cache/c"]
    save_json(rec, tmp_path / "r.json")
    back = load_json(CommandRecord, tmp_path / "r.json").accesses
    assert isinstance(back, AccessSummary)
    assert back.read == {"/app/a", "/app/b"} and back.derived_from == {"/app/out": "/app/a"}
    assert back.environment.read == {"/usr/lib/x.so"} and back.probed == {"/app/missing"}
    assert back.statted == set() and back.events == 0  # in-memory only, like the raw trace
    assert to_dict(back) == to_dict(acc)


def test_an_old_trajectory_loads_with_sets():
    """Earlier trial directories wrote the same keys (some may be missing)."""
    old = {"read": ["/a"], "written": [], "env_read": ["/usr/x"]}
    rec = from_dict(CommandRecord, {"command": "x", "stdout": "", "stderr": "", "exit_code": 0,
                                    "duration_s": 0.0, "accesses": old})
    assert rec.accesses.read == {"/a"} and rec.accesses.written == set()
    assert rec.accesses.environment.read == {"/usr/x"} and rec.accesses.deleted == set()


def test_sets_round_trip_as_sorted_lists():
    assert to_dict({"s": {"b", "a"}}) == {"s": ["a", "b"]}
    assert from_dict(set[str], ["b", "a"]) == {"a", "b"}

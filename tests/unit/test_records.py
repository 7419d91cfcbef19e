from termcredit.records import (CommandRecord, Step, Trajectory, VerifierReport, from_dict,
                                load_json, save_json, to_dict)


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

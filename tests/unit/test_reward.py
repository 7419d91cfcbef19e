"""read_reward: the verifier's reward file is untrusted input (the agent was root in the box)."""

import os

import pytest

from termcredit.tasks.reward import MAX_TXT_BYTES, read_reward


@pytest.mark.parametrize(
    ("name", "text", "reward", "error"),
    [
        ("reward.txt", "1\n", 1.0, None),
        ("reward.txt", "0.25", 0.25, None),
        ("reward.txt", "  0\n", 0.0, None),
        ("reward.txt", "1e-1", 0.1, None),
        ("reward.txt", ".5", 0.5, None),
        ("reward.txt", "yes", 0.0, "reward.txt: not a plain decimal number: 'yes'"),
        ("reward.txt", "nan", 0.0, "reward.txt: not a plain decimal number"),
        ("reward.txt", "inf", 0.0, "reward.txt: not a plain decimal number"),
        ("reward.txt", "1_0", 0.0, "reward.txt: not a plain decimal number"),  # float() takes it
        ("reward.txt", "", 0.0, "reward.txt: not a plain decimal number: ''"),
        ("reward.txt", "1\n1\n", 0.0, "plain decimal number"),
        ("reward.txt", "1.5", 0.0, "reward.txt: the reward 1.5 is outside [0, 1]"),
        ("reward.txt", "-0.1", 0.0, "reward.txt: the reward -0.1 is outside [0, 1]"),
        ("reward.txt", "1e999", 0.0, "reward.txt: the reward inf is not a finite number"),
        ("reward.json", '{"reward": 0.5, "tests": 1}', 0.5, None),
        ("reward.json", '{"reward": 0.5, "tests": 12}', 0.5, None),  # metrics may exceed 1
        ("reward.json", '{"a": 1, "b": 0}', 0.5, None),  # mean of (1, 0)
        ("reward.json", '{"a": 1, "b": 0, "note": "x", "ok": true}', 0.5, None),  # bool skipped
        ("reward.json", "0.75", 0.75, None),
        ("reward.json", "1", 1.0, None),
        ("reward.json", '{"note": "x"}', 0.0, "reward.json: no numeric reward"),
        ("reward.json", "{}", 0.0, "reward.json: no numeric reward"),
        ("reward.json", "{", 0.0, "reward.json: not valid JSON"),
        ("reward.json", "true", 0.0, "reward.json: true is a boolean, not a number"),
        ("reward.json", '{"reward": true}', 0.0, '"reward" must be a number, got true'),
        ("reward.json", '{"reward": "1"}', 0.0, 'reward.json: "reward" must be a number, got "1"'),
        ("reward.json", '{"reward": 1.5}', 0.0, 'reward.json: "reward" 1.5 is outside [0, 1]'),
        ("reward.json", '{"reward": -0.1}', 0.0, 'reward.json: "reward" -0.1 is outside [0, 1]'),
        ("reward.json", "NaN", 0.0, "reward.json: not valid JSON: NaN is not a JSON number"),
        ("reward.json", '{"reward": Infinity}', 0.0, "Infinity is not a JSON number"),
        ("reward.json", '{"reward": 1e999}', 0.0, 'reward.json: "reward" inf is not a finite'),
        ("reward.json", '{"reward": 1, "t": 1e999}', 0.0, "value of 't' is not a finite number"),
        ("reward.json", '{"a": 2, "b": 1}', 0.0, "the mean of its numbers 1.5 is outside [0, 1]"),
        ("reward.json", "[1]", 0.0, "reward.json: must hold a number or an object, got list"),
        ("reward.json", '"1"', 0.0, "reward.json: must hold a number or an object, got str"),
        ("reward.json", "null", 0.0, "got NoneType"),
        ("reward.json", "1.5", 0.0, "reward.json: the reward 1.5 is outside [0, 1]"),
        ("reward.json", "1" * 5000, 0.0, "reward.json: not valid JSON: Exceeds the limit"),
        ("reward.json", '{"reward": 1' + "0" * 400 + "}", 0.0, "value of 'reward' is too large"),
    ],
)
def test_read_reward(tmp_path, name, text, reward, error):
    (tmp_path / name).write_text(text)
    got, metrics, err = read_reward(tmp_path)
    assert got == reward
    assert (err is None) if error is None else (error in err), err
    if error is not None:
        assert metrics == {}


def test_json_metrics_are_its_numbers(tmp_path):
    (tmp_path / "reward.json").write_text('{"reward": 0.5, "tests": 12, "note": "x", "ok": true}')
    assert read_reward(tmp_path) == (0.5, {"reward": 0.5, "tests": 12.0}, None)


def test_missing_reward(tmp_path):
    assert read_reward(tmp_path)[2] == "the verifier wrote neither reward.txt nor reward.json"


def test_symlinked_reward_txt_is_rejected_not_followed(tmp_path):
    host_file = tmp_path / "host-secret"
    host_file.write_text("1\n")
    vdir = tmp_path / "verifier"
    vdir.mkdir()
    (vdir / "reward.txt").symlink_to(host_file)
    assert read_reward(vdir) == (0.0, {}, "reward.txt: a symlink, not a regular file")


def test_dangling_symlink_reward_txt(tmp_path):
    (tmp_path / "reward.txt").symlink_to("/nonexistent/reward")
    (tmp_path / "reward.json").write_text("1")  # not a fallback: reward.txt is present
    assert read_reward(tmp_path) == (0.0, {}, "reward.txt: a symlink, not a regular file")


def test_directory_reward_txt(tmp_path):
    (tmp_path / "reward.txt").mkdir()
    assert read_reward(tmp_path) == (0.0, {}, "reward.txt: a directory, not a regular file")


def test_fifo_reward_txt_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "reward.txt")
    assert read_reward(tmp_path) == (0.0, {}, "reward.txt: a FIFO, not a regular file")


def test_symlinked_reward_json(tmp_path):
    (tmp_path / "target.json").write_text('{"reward": 1}')
    (tmp_path / "reward.json").symlink_to(tmp_path / "target.json")
    assert read_reward(tmp_path) == (0.0, {}, "reward.json: a symlink, not a regular file")


def test_oversized_reward_txt(tmp_path):
    (tmp_path / "reward.txt").write_text("1" + " " * MAX_TXT_BYTES)  # 4097 bytes
    assert read_reward(tmp_path) == (0.0, {}, "reward.txt: larger than 4096 bytes")


def test_reward_txt_at_the_cap_is_read(tmp_path):
    (tmp_path / "reward.txt").write_text("1" + " " * (MAX_TXT_BYTES - 1))  # 4096 bytes
    assert read_reward(tmp_path) == (1.0, {}, None)


def test_reward_json_ignored_when_reward_txt_present(tmp_path):
    (tmp_path / "reward.txt").write_text("0\n")
    (tmp_path / "reward.json").write_text('{"reward": 1}')
    assert read_reward(tmp_path) == (0.0, {}, None)


def test_bad_reward_txt_does_not_fall_back_to_json(tmp_path):
    (tmp_path / "reward.txt").write_text("1.5")
    (tmp_path / "reward.json").write_text('{"reward": 1}')
    assert read_reward(tmp_path) == (0.0, {}, "reward.txt: the reward 1.5 is outside [0, 1]")


def test_non_utf8_reward_txt(tmp_path):
    (tmp_path / "reward.txt").write_bytes(b"\xff1")
    assert read_reward(tmp_path) == (0.0, {}, "reward.txt: not UTF-8 text")

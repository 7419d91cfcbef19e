import pytest

from termcredit.tasks.verifier import read_reward


@pytest.mark.parametrize(
    ("name", "text", "reward", "error"),
    [
        ("reward.txt", "1\n", 1.0, None),
        ("reward.txt", "0.25", 0.25, None),
        ("reward.txt", "yes", 0.0, "unreadable"),
        ("reward.txt", "nan", 0.0, "unreadable"),
        ("reward.json", '{"reward": 0.5, "tests": 1}', 0.5, None),
        ("reward.json", '{"a": 1, "b": 0}', 0.5, None),
        ("reward.json", "0.75", 0.75, None),
        ("reward.json", '{"note": "x"}', 0.0, "no numeric"),
        ("reward.json", "{", 0.0, "unreadable"),
    ],
)
def test_read_reward(tmp_path, name, text, reward, error):
    (tmp_path / name).write_text(text)
    got, _, err = read_reward(tmp_path)
    assert got == reward
    assert (err is None) if error is None else (error in err)


def test_missing_reward(tmp_path):
    assert read_reward(tmp_path)[2] == "the verifier wrote neither reward.txt nor reward.json"

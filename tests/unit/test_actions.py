import pytest

from termcredit.records import CommandRecord
from termcredit.trainer.actions import format_observation, parse_action


@pytest.mark.parametrize(("text", "kind", "command"), [
    ("ls -la", "command", "ls -la"),
    ("$ cat /app/x.txt\n", "command", "cat /app/x.txt"),
    ("```bash\necho hi > /app/a\n```", "command", "echo hi > /app/a"),
    ("I will look.\n```\ncd /app\nls\n```\nthen more", "command", "cd /app\nls"),
    ("```sh\nsort a > b", "command", "sort a > b"),  # unterminated fence (ran out of tokens)
    ("done", "done", ""),
    ("  DONE  ", "done", ""),
    ("```\ndone\n```", "done", ""),
    ("", "invalid", ""),
    ("```bash\n\n```", "invalid", ""),
    ("   \n\n", "invalid", ""),
])
def test_parse_action(text, kind, command):
    a = parse_action(text)
    assert (a.kind, a.command) == (kind, command)


def test_action_key_normalises_whitespace():
    assert parse_action("cat   a  >  b").key == "cat a > b"
    assert parse_action("done").key == "<done>"


def test_observation_is_truncated_with_marker():
    rec = CommandRecord(command="x", stdout="a" * 5000, stderr="oops", exit_code=2,
                        duration_s=0.1)
    obs = format_observation(rec, limit=300)
    assert obs.startswith("exit code: 2\nstdout:\n") and "characters cut" in obs
    assert obs.endswith("stderr:\noops") and len(obs) < 500

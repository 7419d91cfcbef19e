"""Record the realistic 50-command trial that benchmarks/parse_throughput.py and
benchmarks/credit_speed.py read: typical agent commands (exploration, CSV and JSON wrangling,
a script fix, git, tar) on the chain-answer fixture task, the last one writing the answer.

Usage: .venv/bin/python benchmarks/data/record_trial.py   (needs Docker; rewrites trial-50/)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
COMMANDS = [
    "mkdir -p /app/data /app/src && cd /app", "ls -la",
    "printf 'id,name,score\\n1,ann,90\\n2,bob,75\\n3,cy,82\\n' > data/scores.csv",
    "cat data/scores.csv", "head -n 2 data/scores.csv", "wc -l data/scores.csv",
    "grep -n bob data/scores.csv", "sort -t, -k3 -n data/scores.csv > data/sorted.csv",
    "cat data/sorted.csv", "awk -F, 'NR>1{s+=$3} END{print s/(NR-1)}' data/scores.csv",
    "python3 -c \"import csv; rows=list(csv.DictReader(open('data/scores.csv'))); "
    "print(max(rows, key=lambda r: int(r['score']))['name'])\"",
    "echo 'ann' > answer.txt", "cat answer.txt", "find /app -type f",
    "cp data/scores.csv data/backup.csv", "sed -i 's/bob/rob/' data/scores.csv",
    "diff data/scores.csv data/backup.csv || true", "mv data/backup.csv /tmp/",
    "rm /tmp/backup.csv", "ls data",
    "printf 'def add(a, b):\\n    return a - b\\n' > src/calc.py",
    "python3 -c 'import sys; sys.path.insert(0, \"src\"); import calc; print(calc.add(2, 3))'",
    "sed -i 's/a - b/a + b/' src/calc.py",
    "python3 -c 'import sys; sys.path.insert(0, \"src\"); import calc; print(calc.add(2, 3))'",
    "cat src/calc.py", "git init -q /app/repo && cd /app/repo",
    "git config user.email a@b.c && git config user.name a", "echo hello > README.md",
    "git add README.md && git commit -qm init", "git log --oneline", "echo more >> README.md",
    "git diff --stat", "git commit -qam more", "git status --short", "cd /app",
    "tar czf /tmp/app.tgz data src", "tar tzf /tmp/app.tgz",
    "mkdir -p out && tar xzf /tmp/app.tgz -C out", "ls -R out", "du -sh out",
    "env | sort | head -3", "ps aux | head -5", "cat /etc/os-release | head -2",
    "python3 -m json.tool <<< '{\"a\": 1}'", "echo '{\"k\": [1,2,3]}' > data/x.json",
    "python3 -c 'import json; print(sum(json.load(open(\"data/x.json\"))[\"k\"]))' > data/sum.txt",
    "cat data/sum.txt", "chmod 600 data/sum.txt && stat -c %a data/sum.txt",
    "find . -name '*.py' | xargs wc -l",
    "sort -t, -k2 -n /app/data.csv | tail -n 1 | cut -d, -f1 > /app/answer.txt",
]
assert len(COMMANDS) == 50


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        replay = Path(tmp) / "commands.txt"
        replay.write_text("\n".join(COMMANDS) + "\n")
        subprocess.run([sys.executable, "-m", "termcredit.cli", "run", "--task",
                        str(REPO / "tests/fixtures/tasks/chain-answer"), "--agent",
                        f"replay:{replay}", "--out", f"{tmp}/run"], check=True, cwd=REPO)
        trial = Path(tmp) / "run" / "chain-answer" / "attempt-0"
        dest = HERE / "trial-50"
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(trial, dest)
    print(f"recorded {dest}")


if __name__ == "__main__":
    main()

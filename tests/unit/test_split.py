"""split_commands: bash's own grammar splits a solve.sh into whole top-level commands."""

from pathlib import Path

from termcredit.tasks.split import split_commands

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def solve(name: str) -> str:
    return (TASKS / name / "solution" / "solve.sh").read_text()


def test_department_summary_is_one_python_command():
    assert split_commands(solve("department-summary")) == [
        "python3 -c 'import csv, json\n"
        'rows = list(csv.DictReader(open("/app/employees.csv")))\n'
        'group = lambda d: [r for r in rows if r["department"] == d]\n'
        'json.dump({d: {"headcount": len(group(d)), "avg_salary": round(sum(int(r["salary"]) '
        'for r in group(d)) / len(group(d)), 2), "newest": max(group(d), key=lambda r: '
        'r["start_date"])["name"]} for d in {r["department"] for r in rows}}, '
        'open("/app/departments.json", "w"), indent=2)\'',
    ]


def test_region_sales_report_keeps_the_awk_program_whole():
    assert split_commands(solve("region-sales-report")) == [
        "awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }\n"
        '         { total[$col["region"]] += $col["units"] * $col["unit_price"] }\n'
        '         END { for (r in total) printf "%s,%.2f\\n", r, total[r] }\' '
        "/app/data/sales-*.csv > /app/totals.tmp",
        "{ echo region,revenue; sort -t, -k2,2nr /app/totals.tmp; } > /app/report.csv",
    ]


def test_update_service_config_is_one_python_command():
    assert split_commands(solve("update-service-config")) == [
        "python3 -c 'import json; p = \"/app/service/config.json\"; c = json.load(open(p))\n"
        'c["server"].update(port=9090, workers=4); c["database"]["pool_size"] = 12; '
        'del c["database"]["legacy_mode"]; c["features"]["audit_log"] = True\n'
        'json.dump(c, open(p, "w"), indent=2)\'',
    ]


def test_one_command_per_line_and_comments_dropped():
    script = "#!/bin/bash\n# first\ncd /app\n\n  # indented comment\nls -la  # trailing\n"
    assert split_commands(script) == ["cd /app", "ls -la  # trailing"]


def test_heredoc_stays_whole():
    script = ("cat > /app/x.conf <<'EOF'\nkey = 1\n# not a comment\n\nother = 'q\nEOF\n"
              "echo done\n")
    assert split_commands(script) == [
        "cat > /app/x.conf <<'EOF'\nkey = 1\n# not a comment\n\nother = 'q\nEOF",
        "echo done",
    ]


def test_heredoc_with_dash_and_expansion():
    script = "cat <<-END > /tmp/o\n\tv=$HOME\n\tEND\nwc -l /tmp/o\n"
    assert split_commands(script) == ["cat <<-END > /tmp/o\n\tv=$HOME\n\tEND", "wc -l /tmp/o"]


def test_if_fi_and_loops_stay_whole():
    script = ("if [ -f /app/a ]; then\n  rm /app/a\nelse\n  touch /app/a\nfi\n"
              "for f in /app/*; do\n  echo \"$f\"\ndone\n"
              "while false\ndo\n  :\ndone\n")
    assert split_commands(script) == [
        "if [ -f /app/a ]; then\n  rm /app/a\nelse\n  touch /app/a\nfi",
        "for f in /app/*; do\n  echo \"$f\"\ndone",
        "while false\ndo\n  :\ndone",
    ]


def test_line_continuation_kept_verbatim():
    script = "grep -r x /app \\\n  | sort \\\n  | uniq > /app/o\necho next\n"
    assert split_commands(script) == ["grep -r x /app \\\n  | sort \\\n  | uniq > /app/o",
                                      "echo next"]


def test_pipes_and_and_lists_across_lines():
    script = "cat /app/a |\n  sort &&\n  echo ok\necho b\n"
    assert split_commands(script) == ["cat /app/a |\n  sort &&\n  echo ok", "echo b"]


def test_set_options_dropped():
    script = "#!/usr/bin/env bash\nset -euo pipefail\nset -e\nset -o errexit\necho a\n"
    assert split_commands(script) == ["echo a"]


def test_dollar_single_quotes_and_functions():
    script = "printf $'a\\nb\\n' > /tmp/ab\nf() {\n  echo \"$1\"\n}\nf x\n"
    assert split_commands(script) == ["printf $'a\\nb\\n' > /tmp/ab", "f() {\n  echo \"$1\"\n}",
                                      "f x"]


def test_crlf_and_broken_tail():
    assert split_commands("echo a\r\necho b\r\n") == ["echo a", "echo b"]
    assert split_commands("echo a\necho 'never closed\nmore\n") == ["echo a",
                                                                   "echo 'never closed\nmore"]


def test_every_suite_oracle_splits_into_commands_that_parse():
    import subprocess

    for path in sorted(TASKS.glob("*/solution/solve.sh")):
        cmds = split_commands(path.read_text())
        assert cmds, path
        for c in cmds:
            assert subprocess.run(["bash", "-n", "-c", c]).returncode == 0, (path, c)

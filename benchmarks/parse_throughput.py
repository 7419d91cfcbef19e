"""Tracer parse speed on a recorded realistic trace (a 50-command agent session).

Parses the whole traced-shell session of benchmarks/data/trial-50 (a recorded 50-command trial;
re-record it with benchmarks/data/record_trial.py) with parse_session, best of --repeats, and, side by side, the bare line split the parser
starts from, so the ratio shows what parsing costs over reading the text at all.
Last line: `RESULT lines_per_s=<n> ms_per_50_commands=<m>`.

Usage: .venv/bin/python benchmarks/parse_throughput.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from termcredit.tracer import parse_session
from termcredit.trialdir import TrialPaths

TRIAL = Path(__file__).with_name("data") / "trial-50"


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    text = TrialPaths(TRIAL).session_trace_text()
    lines = text.count("\n")
    session = parse_session(text)
    n_cmds = len(session.commands)
    assert n_cmds == 50 and session.skipped_lines == 0, (n_cmds, session.skipped_lines)
    parse_s = best(lambda: parse_session(text), args.repeats)
    split_s = best(lambda: [ln.split(" ", 2) for ln in text.splitlines()], args.repeats)
    print(f"{lines} lines, {len(text)} bytes, {n_cmds} commands")
    print(f"parse_session: {parse_s * 1000:.1f} ms; bare line split: {split_s * 1000:.2f} ms "
          f"(parsing costs {parse_s / split_s:.0f}x reading the lines)")
    print(f"RESULT lines_per_s={lines / parse_s:.0f} ms_per_50_commands={parse_s * 1000 * 50 / n_cmds:.1f}")


if __name__ == "__main__":
    main()

"""Scheduler logs and state of one instance: gen.py SEED [ROOT]. The verifier imports files(),
failed_job() and expected(). Keep this file identical in environment/ and tests/."""
import random
import sys
from pathlib import Path

JOBS = ["backup-db", "sync-s3", "report-daily", "vacuum", "rotate-keys", "index-search",
        "export-crm", "thumbnails", "billing-run", "purge-sessions"]


def _run(rng: random.Random, day: int, first_id: int, jobs: list[str], failing: str) -> list[str]:
    """One night's log lines; the job named `failing` ends with status=FAILED."""
    lines, t = [], 3 * 3600
    stamp = lambda: f"2024-05-{day:02d} {t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
    for k, name in enumerate(jobs):
        job = f"job=J-{first_id + k} name={name}"
        lines.append(f"{stamp()} INFO  {job} started")
        t += rng.randint(20, 300)
        trouble = rng.random()
        if name != failing and trouble < 0.35:
            why = rng.choice(["upload timed out", "connection reset by peer", "lock held by another run"])
            lines.append(f"{stamp()} ERROR {job} {why}, retrying (attempt 1/3)")
            t += rng.randint(20, 120)
        elif name != failing and trouble < 0.55:
            lines.append(f"{stamp()} WARN  {job} {rng.randint(2, 9)} records failed validation, skipped")
            t += rng.randint(5, 60)
        if name == failing:
            lines.append(f"{stamp()} ERROR {job} finished status=FAILED exit={rng.choice([1, 2, 137])}")
        else:
            lines.append(f"{stamp()} INFO  {job} finished status=OK")
        t += rng.randint(1, 30)
    return lines


def _build(seed: int) -> tuple[dict[str, str], str]:
    rng = random.Random(seed)
    day = rng.randint(10, 28)
    old_jobs = rng.sample(JOBS, rng.randint(5, 8))
    new_jobs = rng.sample(JOBS, rng.randint(5, 8))
    old_fail, new_fail = rng.choice(old_jobs), rng.choice(new_jobs)
    old_first = rng.randint(30000, 60000)
    new_first = old_first + len(old_jobs) + rng.randint(0, 40)
    old_id = f"J-{old_first + old_jobs.index(old_fail)}"
    new_id = f"J-{new_first + new_jobs.index(new_fail)}"
    files = {
        "logs/scheduler.log.1": "\n".join(_run(rng, day - 1, old_first, old_jobs, old_fail)) + "\n",
        "logs/scheduler.log": "\n".join(_run(rng, day, new_first, new_jobs, new_fail)) + "\n",
        "state/scheduler.state": (
            "# scheduler state (key=value), read by the scheduler at start-up\n"
            f"paused=false\nlast_run=2024-05-{day:02d}T03:00:00\nretry_job={old_id}\n"
            f"max_retries={rng.randint(2, 5)}\nnotify=ops@example.com\n"),
        "state/scheduler.state.example": (
            "# example state file\npaused=false\nlast_run=\nretry_job=\nmax_retries=3\n"
            "notify=\n"),
        "state/NOTES.txt": (f"2024-05-{day - 1:02d}: {old_id} ({old_fail}) failed, queued it for "
                            "a retry in scheduler.state.\n"),
    }
    return files, new_id


def files(seed: int) -> dict[str, str]:
    """{path under /app: text} as built."""
    return _build(seed)[0]


def failed_job(seed: int) -> str:
    """The id of the job that failed in the current log."""
    return _build(seed)[1]


def expected(seed: int) -> dict[str, str]:
    """The files after the task: retry_job set to the failed job's id, nothing else."""
    out = files(seed)
    job = failed_job(seed)
    out["state/scheduler.state"] = "".join(
        f"retry_job={job}\n" if ln.startswith("retry_job=") else ln
        for ln in out["state/scheduler.state"].splitlines(keepends=True))
    return out


if __name__ == "__main__":
    root = Path(sys.argv[2] if len(sys.argv) > 2 else "/app")
    for name, text in files(int(sys.argv[1])).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)

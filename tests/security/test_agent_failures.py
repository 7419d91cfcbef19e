"""Infra means infra: what the agent breaks with its own files, processes or resource use is the
agent's failure (reward 0, the reason recorded), never ``infra_error`` (which training masks, so
a policy would learn that breaking the sandbox beats failing the task).

Each attack is a failure of the agent's making; its honest twin does the same heavy thing on a
solved task and keeps reward 1, unflagged.
"""

import pytest

from .test_honest_services import check_clean

pytestmark = pytest.mark.docker

# a kept service that takes every pid of the container (threads count against pids_limit) and
# grabs each one freed; detached, so the step itself ends
PID_HOG = """python3 - <<'TC_PY'
import os, threading, time
def pids():
    for d in ("/sys/fs/cgroup/pids/", "/sys/fs/cgroup/"):
        try:
            return int(open(d + "pids.current").read()), int(open(d + "pids.max").read())
        except (OSError, ValueError):
            continue
    return 0, 0
if os.fork():  # the step ends once the service holds (nearly) every pid
    deadline = time.time() + 100
    while time.time() < deadline:
        now, top = pids()
        if top and now >= top - 2:
            break
        time.sleep(0.5)
    print("pids %d of %d" % pids(), flush=True)
    os._exit(0)
os.setsid()
threading.stack_size(1 << 16)
for fd in (0, 1, 2):
    os.close(fd)
while True:
    try:
        threading.Thread(target=time.sleep, args=(1e6,), daemon=True).start()
    except RuntimeError:
        time.sleep(0.01)
TC_PY
echo started"""
# memory no process owns in its RSS (an unmapped memfd), held by a kept service: the OOM
# killer's badness does not see it, so it would choose the largest process it can see
MEMFD_HOG = """python3 - <<'TC_PY'
import os, time
if os.fork():
    time.sleep(8)
    os._exit(0)
os.setsid()
fd = os.memfd_create("hog")
block = b"x" * (1 << 20)
try:
    while True:
        os.write(fd, block)
except OSError:
    pass
time.sleep(1e6)
TC_PY
echo started"""
SHM_FILL = ("head -c 2G /dev/zero > /dev/shm/fill; echo \"exit=$?\"; "
            "df -k /dev/shm | tail -1")
BIG_COPY = {"cmd": "cp -r /usr/share /tmp/backup && find /tmp/backup | wc -l", "timeout": 100}
SPARSE = "truncate -s 4T /app/huge && ls -ls /app/huge"

TRIALS = {
    "big-copy": {"victim": "hello-kill", "steps": [BIG_COPY, "echo after"]},
    "big-copy-honest": {"victim": "hello-kill", "steps": [{"oracle": True}, BIG_COPY]},
    "rm-bash": {"victim": "hello-kill", "steps": ["rm -f /usr/bin/bash /bin/bash", "echo after"]},
    "rm-bash-exit": {"victim": "hello-kill", "steps": ["rm -f /usr/bin/bash /bin/bash; exit 3",
                                                       "echo never"]},
    "sparse-4t": {"victim": "hello-kill", "steps": [SPARSE, "echo after"]},
    "sparse-4t-honest": {"victim": "hello-kill", "steps": [{"oracle": True}, SPARSE]},
    "pid-hog": {"victim": "hello-keep", "steps": [{"cmd": PID_HOG, "timeout": 110},
                                                  "echo after"]},
    "memfd-hog": {"victim": "hello-keep", "steps": [{"cmd": MEMFD_HOG, "timeout": 60},
                                                    "echo after"]},
    "shm-fill": {"victim": "hello-kill", "steps": [SHM_FILL, "echo after"]},
}


def check_agents_failure(t) -> None:
    """Reward 0, and the episode counts: no infrastructure failure recorded anywhere."""
    assert t.traj.get("termination") != "infra_error", t.summary()
    assert "infra_error" not in (t.traj.get("info") or {}), t.traj.get("info")
    assert t.reward == 0.0, t.summary()


def file_entry(t, step: int, path: str) -> dict:
    found = [f for f in t.step(step).get("files") or [] if f["path"] == path]
    assert found, f"{path} not in step {step}'s files: {t.step(step).get('files')}"
    return found[0]


@pytest.mark.trial("big-copy")
def test_a_copy_of_thousands_of_files_is_the_agents_episode(campaign):
    t = campaign["big-copy"]
    check_agents_failure(t)
    assert int(t.out(0).split()[-1]) > 5000, t.step(0)  # find's count: the copy really ran
    assert t.out(1) == "after\n"
    assert t.integrity == [], t.integrity


@pytest.mark.trial("big-copy-honest")
def test_a_big_copy_on_a_solved_task_is_clean(campaign):
    t = campaign["big-copy-honest"]
    assert int(t.out(1).split()[-1]) > 5000, t.step(1)
    check_clean(t)


@pytest.mark.trial("rm-bash")
def test_removing_bash_fails_the_agent_not_the_harness(campaign):
    t = campaign["rm-bash"]
    check_agents_failure(t)
    assert t.out(1) == "after\n"  # the running shell goes on without its file


@pytest.mark.trial("rm-bash-exit")
def test_a_shell_that_cannot_restart_ends_the_episode_as_the_agents(campaign):
    t = campaign["rm-bash-exit"]
    check_agents_failure(t)
    assert t.traj["termination"] == "shell_lost", t.summary()
    assert "bash" in t.traj["info"]["shell_lost"], t.traj["info"]
    assert len(t.steps) == 1  # the episode ended at the step that lost the shell


@pytest.mark.trial("sparse-4t")
def test_a_4_tib_sparse_file_is_hashed_in_part_and_flagged(campaign):
    t = campaign["sparse-4t"]
    check_agents_failure(t)
    entry = file_entry(t, 0, "/app/huge")
    assert entry["size"] == 4 << 40 and entry["partial"] is True, entry
    assert not any("forged" in r for r in t.integrity), t.integrity


@pytest.mark.trial("sparse-4t-honest")
def test_a_sparse_file_on_a_solved_task_is_clean(campaign):
    t = campaign["sparse-4t-honest"]
    assert file_entry(t, 1, "/app/huge")["partial"] is True
    check_clean(t)


@pytest.mark.trial("pid-hog")
def test_a_kept_service_that_takes_every_pid_fails_the_agent(campaign):
    t = campaign["pid-hog"]
    check_agents_failure(t)
    now, _, top = t.out(0).split()[1:4]
    assert int(now) >= int(top) - 2, t.step(0)  # the service held every pid
    assert t.verifier.get("error"), t.verifier  # the reason: the verifier could not run


@pytest.mark.trial("memfd-hog")
def test_hidden_memory_is_the_agents_and_the_harness_survives_the_oom_killer(campaign):
    t = campaign["memfd-hog"]
    check_agents_failure(t)
    assert "Killed" in t.step(0)["stderr"], t.step(0)  # the OOM killer chose the agent's
    assert t.out(1) == "after\n"
    assert t.verifier.get("exit_code") is not None, t.verifier  # and the verifier still ran


@pytest.mark.trial("shm-fill")
def test_dev_shm_is_small_and_filling_it_is_the_agents(campaign):
    t = campaign["shm-fill"]
    check_agents_failure(t)
    out = t.out(0)
    assert "exit=1" in out, t.step(0)  # head: no space left
    size_kb = int(out.split()[-5])  # df -k: Filesystem 1K-blocks Used Available Use% Mounted
    assert size_kb <= 64 * 1024, out  # well under the task's 512 MB of memory
    assert t.out(1) == "after\n"

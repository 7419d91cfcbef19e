"""What DepGPO and the oracle make of the horizon tier's own demonstrations, run for real.

Every task of the horizon tier has its eight warm-start demonstrations (bench/decoy_demos.py:
four solved with look-arounds, four failed by one breaking decoy) rolled out in real sandboxes
by a scripted policy (the test suite's, one token per action), as one group; the trainer's
provider labels the steps from the task's [metadata.oracle]; then both estimators weigh the
group. Counted: solved demonstrations where DepGPO's per-step advantages equal the oracle's
(within 1e-6), and, for the failed ones, how DepGPO treats the breaking decoy: weight 0
("zero"), the same as the largest weight on another command ("as_chain"), or more than every
other command ("singled", what the oracle does every time).

Prints one line per failed demonstration and last
`RESULT solved_equal=A/B decoy_zero=Z decoy_as_chain=C decoy_singled=S failed=F`.

Usage: .venv/bin/python benchmarks/decoy_blame.py [TASK_DIR ...]   (default: the tier's)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from scripted_policy import Layout, ScriptedPolicy  # noqa: E402

from termcredit import estimators  # noqa: E402
from termcredit.bench.decoy_demos import MIX, decoy_demos  # noqa: E402
from termcredit.bench.protocol import HORIZON_TASKS  # noqa: E402
from termcredit.records import Trajectory  # noqa: E402
from termcredit.sandbox import SandboxPool, docker_client, ensure_base_image, gc  # noqa: E402
from termcredit.tasks import load_task  # noqa: E402
from termcredit.tasks.build import build_image  # noqa: E402
from termcredit.trainer.config import TrainConfig  # noqa: E402
from termcredit.trainer.providers import providers_for  # noqa: E402
from termcredit.trainer.rollout import RolloutConfig, rollout_group  # noqa: E402


def rollouts(task_dir: Path, client, base: str) -> list[Trajectory]:
    task = load_task(task_dir)
    scripts = [[a for a, _ in d.turns] for d in decoy_demos(task)]
    pool = SandboxPool(client, "decoy-blame", ahead=4)
    try:
        return rollout_group(ScriptedPolicy(scripts), Layout(), task,
                             build_image(client, task, base_ref=base), pool, len(scripts),
                             Path(tempfile.mkdtemp()), RolloutConfig(max_turns=10,
                                                                     command_timeout=30))
    finally:
        pool.close()
        gc(client, run_id="decoy-blame")


def main() -> None:
    dirs = [Path(a) for a in sys.argv[1:]] or [REPO / "tasks" / t for t in HORIZON_TASKS]
    client = docker_client()
    base = ensure_base_image(client)
    counts = {"solved": 0, "equal": 0, "zero": 0, "as_chain": 0, "singled": 0, "failed": 0}
    for d in dirs:
        group = rollouts(d, client, base)
        (provide,) = providers_for({estimators.ORACLE_STEPS},
                                   TrainConfig(algo="oracle", tasks=[str(d)]), None)
        provide(group)
        dep = estimators.build("depgpo")(group).step_advantages
        orc = estimators.build("oracle")(group).step_advantages
        for k, (t, (_, broken)) in enumerate(zip(group, MIX)):
            if not broken:
                counts["solved"] += 1
                same = all(abs(a - b) < 1e-6 for a, b in zip(dep[k], orc[k]))
                counts["equal"] += same
                if not same:
                    print(f"{d.name} demo {k} (solved): depgpo "
                          + " ".join(f"{a:+.2f}" for a in dep[k]) + ", oracle "
                          + " ".join(f"{b:+.2f}" for b in orc[k]))
                continue
            counts["failed"] += 1
            [bad] = t.info["oracle"]["breaking"]
            mags = [abs(a) for i, a in enumerate(dep[k]) if t.steps[i].command is not None]
            others = max(m for i, m in enumerate(mags) if i != bad)
            kind = ("zero" if mags[bad] < 1e-9 else "singled" if mags[bad] > others + 1e-9
                    else "as_chain")
            counts[kind] += 1
            print(f"{d.name} demo {k}: decoy {t.steps[bad].action!r}: depgpo {dep[k][bad]:+.2f} "
                  f"(largest other {others:.2f}: {kind}), oracle {orc[k][bad]:+.2f}")
    print(f"RESULT solved_equal={counts['equal']}/{counts['solved']} decoy_zero={counts['zero']} "
          f"decoy_as_chain={counts['as_chain']} decoy_singled={counts['singled']} "
          f"failed={counts['failed']}")


if __name__ == "__main__":
    main()

"""What DepGPO and the oracle make of the horizon tier's own demonstrations, run for real.

Every task of the horizon tier has its eight warm-start demonstrations (bench/decoy_demos.py:
four solved with look-arounds, four failed by one breaking decoy) rolled out in real sandboxes
by a scripted policy (the test suite's, one token per action), as one group; the trainer's
provider labels the steps from the task's [metadata.oracle]; then both estimators weigh the
group. Counted: solved demonstrations where DepGPO's per-step advantages equal the oracle's
(within 1e-6), and, for the failed ones, how DepGPO treats the breaking decoy: weight 0
("zero"), the same as the largest weight on another command ("as_chain"), or more than every
other command ("singled", what the oracle does every time).

The failed ones are counted for DepGPO's default and for `depgpo[negative=destroyers]`
(blame spread over the steps that destroyed what a later step needed). On solved ones the
two are the same estimator (the setting only changes a negative advantage).

Prints one line per failed demonstration and last
`RESULT solved_equal=A/B decoy_zero=Z decoy_as_chain=C decoy_singled=S failed=F` (the
default) and the same as `RESULT[depgpo[negative=destroyers]] ...`.

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
from termcredit.estimators.spec import parse_spec  # noqa: E402
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


SPECS = ("depgpo", "depgpo[negative=destroyers]")  # the default, and blame on destroyers


def blame_kind(t: Trajectory, adv: list[float], bad: int) -> tuple[str, float]:
    """How per-step advantages ``adv`` treat the breaking step ``bad``, and the largest
    magnitude on another command."""
    mags = {i: abs(a) for i, a in enumerate(adv) if t.steps[i].command is not None}
    others = max(m for i, m in mags.items() if i != bad)
    return ("zero" if mags[bad] < 1e-9 else "singled" if mags[bad] > others + 1e-9
            else "as_chain"), others


def main() -> None:
    dirs = [Path(a) for a in sys.argv[1:]] or [REPO / "tasks" / t for t in HORIZON_TASKS]
    client = docker_client()
    base = ensure_base_image(client)
    solved = {"solved": 0, "equal": 0}
    counts = {spec: dict.fromkeys(("zero", "as_chain", "singled", "failed"), 0)
              for spec in SPECS}
    for d in dirs:
        group = rollouts(d, client, base)
        (provide,) = providers_for({estimators.ORACLE_STEPS},
                                   TrainConfig(algo="oracle", tasks=[str(d)]), None)
        provide(group)
        deps = {}
        for spec in SPECS:
            name, settings = parse_spec(spec)
            deps[spec] = estimators.build(name, **settings)(group).step_advantages
        dep, orc = deps["depgpo"], estimators.build("oracle")(group).step_advantages
        for k, (t, (_, broken)) in enumerate(zip(group, MIX)):
            if not broken:
                solved["solved"] += 1
                same = all(abs(a - b) < 1e-6 for a, b in zip(dep[k], orc[k]))
                solved["equal"] += same
                if not same:
                    print(f"{d.name} demo {k} (solved): depgpo "
                          + " ".join(f"{a:+.2f}" for a in dep[k]) + ", oracle "
                          + " ".join(f"{b:+.2f}" for b in orc[k]))
                continue
            [bad] = t.info["oracle"]["breaking"]
            line = f"{d.name} demo {k}: decoy {t.steps[bad].action!r}:"
            for spec in SPECS:
                kind, others = blame_kind(t, deps[spec][k], bad)
                counts[spec]["failed"] += 1
                counts[spec][kind] += 1
                line += f" {spec} {deps[spec][k][bad]:+.2f} (largest other {others:.2f}: {kind}),"
            print(f"{line} oracle {orc[k][bad]:+.2f}")
    for spec in SPECS:
        c = counts[spec]
        tag = "" if spec == "depgpo" else f"[{spec}]"
        print(f"RESULT{tag} solved_equal={solved['equal']}/{solved['solved']} "
              f"decoy_zero={c['zero']} decoy_as_chain={c['as_chain']} "
              f"decoy_singled={c['singled']} failed={c['failed']}")


if __name__ == "__main__":
    main()

"""What per-step credit can gain over GRPO at the menu tier's budget, in a tabular model.

The model (`termcredit.bench.ceiling_model`): the menu tier's task shape (7 necessary commands
in order, look-arounds, breaking decoys, out-of-order commands that error, `done`; a budget of
10 turns), a table of logits per state as the policy, started where the real menu start is
(success 0.25, decoy episodes 0.48), trained by the tier's protocol (8 updates of 3 groups of
6, GRPO's group advantage, token-mean loss) with exact success after each update.

For each optimizer (Adam, SGD) the learning rate is set so GRPO ends where the real menu
tier's GRPO ended (final success 0.50); then every weighting trains from the same random
streams. Printed: final success, decoy and omission rates, the gap to GRPO with its 95%
interval over model seeds, and how often a 3-seed experiment would see a gap >= 0.10.
SGD rows also give GRPO at 2x, 4x and 8x the learning rate: is the oracle's gain more than
a larger step? Both again with a bias per action shared by every state (``shared``: a step
on a choice in one state moves it in all, as in a language model). Then, under Adam, the gap
as the budget grows (more updates).

Usage: .venv/bin/python benchmarks/credit_ceiling_model.py [--seeds 2000]
Prints `RESULT optimizer=... weighting=... final=... gap=...` lines, one per row.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from termcredit.bench.ceiling_model import WEIGHTINGS, Chain, Protocol, train

TARGET = 0.50  # the real menu tier's GRPO final success (results/menu-2026-12-06)


def final(chain: Chain, protocol: Protocol, weighting: str, seeds: int):
    return train(chain, protocol, weighting, seeds, rng_seed=1)[-1]


def calibrate(chain: Chain, optimizer: str, seeds: int, shared: bool = False) -> float:
    """The learning rate at which GRPO's mean final success is TARGET (bisection in log lr)."""
    lo, hi = (1e-3, 1.0) if optimizer == "adam" else (0.1, 100.0)
    for _ in range(14):
        mid = math.sqrt(lo * hi)
        got = final(chain, Protocol(lr=mid, optimizer=optimizer, shared=shared), "grpo",
                    seeds).success.mean()
        lo, hi = (mid, hi) if got < TARGET else (lo, mid)
    return math.sqrt(lo * hi)


def row(name: str, optimizer: str, lr: float, out, base) -> str:
    gap = out.success - base.success
    half = 1.96 * gap.std(ddof=1) / math.sqrt(len(gap))
    triples = gap[: len(gap) // 3 * 3].reshape(-1, 3).mean(1)
    print(f"  {name:30s} lr {lr:<8.4g} final {out.success.mean():.3f}  decoy "
          f"{out.decoy.mean():.3f}  omission {out.omission.mean():.3f}  - grpo "
          f"{gap.mean():+.3f} [{gap.mean() - half:+.3f}, {gap.mean() + half:+.3f}]  "
          f"P(3 seeds >= +0.10) {np.mean(triples >= 0.10):.2f}")
    return (f"RESULT optimizer={optimizer} weighting={name} lr={lr:.4g} "
            f"final={out.success.mean():.3f} gap={gap.mean():+.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=2000)
    args = ap.parse_args()
    chain, results = Chain(), []
    for optimizer, shared in (("adam", False), ("sgd", False), ("adam", True), ("sgd", True)):
        lr = calibrate(chain, optimizer, args.seeds // 2, shared)
        proto = Protocol(lr=lr, optimizer=optimizer, shared=shared)
        base = final(chain, proto, "grpo", args.seeds)
        tag = "-shared" if shared else ""
        print(f"{optimizer}{', with a bias shared by every state' if shared else ''}: lr "
              f"{lr:.4g} (GRPO's final success {base.success.mean():.3f})")
        for weighting in WEIGHTINGS:
            out = final(chain, proto, weighting, args.seeds)
            results.append(row(weighting + tag, optimizer, lr, out, base))
        if optimizer == "sgd" and not shared:
            for k in (2, 4, 8):
                out = final(chain, Protocol(lr=lr * k, optimizer=optimizer), "grpo", args.seeds)
                results.append(row(f"grpo-lr-x{k}", optimizer, lr * k, out, base))
    adam = calibrate(chain, "adam", args.seeds // 2)
    print(f"adam at lr {adam:.4g}: oracle - grpo as the budget grows")
    for updates in (8, 32, 128):
        proto = Protocol(updates=updates, lr=adam)
        seeds = max(300, args.seeds * 8 // updates)
        base = final(chain, proto, "grpo", seeds)
        for weighting in ("oracle", "oracle-peak"):
            out = final(chain, proto, weighting, seeds)
            results.append(row(f"{weighting}-u{updates}", "adam", adam, out, base))
    print("\n".join(results))


if __name__ == "__main__":
    main()

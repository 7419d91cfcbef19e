"""One training step of the tiny policy on a fixed batch: termcredit's update (PPO clipped loss,
masked log-probs, micro-batching with global counts, grad clipping, AdamW) against a bare
Hugging Face forward/backward/AdamW (cross-entropy with labels) on the same tokens.

Alternating runs, median of --repeats each; throughput = tokens in the batch / step time.
Peak memory of a step, each side measured alone: on a GPU the torch allocator's peak; on the
CPU the peak resident size of a fresh process for that side (ru_maxrss) over its size before
the first step (model, batch and old log-probs loaded).
Last line: `RESULT ratio=<ours / bare tokens per s> mem_ratio=<ours / bare peak>`.
Goal: ratio >= 1.0, mem_ratio <= 1.1.

Usage: .venv/bin/python benchmarks/train_step.py [--batch 8] [--seq 512] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from typing import Callable

import psutil

import torch

from termcredit.trainer.loss import LossConfig
from termcredit.trainer.policy import load_policy
from termcredit.trainer.update import ppo_update


def setup(args: argparse.Namespace):
    torch.set_num_threads(max(1, torch.get_num_threads()))
    policy = load_policy(args.model, device=args.device)
    return policy, make_steps(policy, args.batch, args.seq)


def make_steps(policy, batch: int, seq: int) -> dict[str, Callable[[], None]]:
    """{"ours", "bare"}: one step each on the same random batch (3/5 of each row prompt, loss
    mask 0; the rest sampled, advantages +-1) with its own AdamW over the policy's weights."""
    torch.manual_seed(0)
    vocab = policy.model.config.vocab_size
    seqs = [torch.randint(3, vocab, (seq,)).tolist() for _ in range(batch)]
    masks = [[0] * (seq * 3 // 5) + [1] * (seq - seq * 3 // 5) for _ in seqs]
    advs = [[(1.0 if i % 2 else -1.0) * m for m in mask] for i, mask in enumerate(masks)]
    old = policy.score(seqs, masks)
    ours_opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-6, weight_decay=0.0)
    bare_opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-6, weight_decay=0.0)
    ids = torch.tensor(seqs, device=policy.device)
    labels = torch.tensor([[t if m else -100 for t, m in zip(s, mk)]
                           for s, mk in zip(seqs, masks)], device=policy.device)

    def ours() -> None:
        ppo_update(policy, ours_opt, seqs, masks, advs, old, None, LossConfig(),
                   micro_batch=batch)

    def bare() -> None:
        policy.model.train()
        bare_opt.zero_grad(set_to_none=True)
        policy.model(input_ids=ids, labels=labels).loss.backward()
        bare_opt.step()

    return {"ours": ours, "bare": bare}


def time_steps(steps: dict[str, Callable[[], None]], repeats: int, gpu: bool
               ) -> tuple[dict[str, float], dict[str, float]]:
    """Alternating runs after one warm-up each: (median seconds per step, CUDA peak MiB of a
    step over what was allocated before it; empty off CUDA)."""
    for fn in steps.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {side: [] for side in steps}
    peaks: dict[str, float] = {}
    for _ in range(repeats):
        for side, fn in steps.items():
            if gpu:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
            t0 = time.perf_counter()
            fn()
            if gpu:
                torch.cuda.synchronize()
                peaks[side] = (torch.cuda.max_memory_allocated() - base) / (1 << 20)
            times[side].append(time.perf_counter() - t0)
    return {side: statistics.median(ts) for side, ts in times.items()}, peaks


def peak_alone(args: argparse.Namespace, side: str) -> float:
    """Peak memory (MiB) of one step of ``side`` in a process of its own (CPU)."""
    argv = [sys.executable, __file__, "--memory-of", side, "--batch", str(args.batch),
            "--seq", str(args.seq), "--model", args.model, "--device", args.device]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["peak_mib"])


def memory_of(args: argparse.Namespace) -> None:
    _, steps = setup(args)
    before = psutil.Process().memory_info().rss
    steps[args.memory_of]()
    steps[args.memory_of]()  # the optimizer's state exists from the second step on
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"peak_mib": (peak - before) / (1 << 20)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--memory-of", choices=["ours", "bare"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_of:
        return memory_of(args)
    policy, steps = setup(args)
    gpu = policy.device.type == "cuda"
    med, peaks = time_steps(steps, args.repeats, gpu)
    if not gpu:
        peaks = {side: peak_alone(args, side) for side in steps}
    n = args.batch * args.seq
    o, b = med["ours"], med["bare"]
    print(f"batch {args.batch} x {args.seq} tokens, {args.model} on {policy.device} "
          f"({sum(p.numel() for p in policy.model.parameters()) / 1e6:.2f} M params)")
    print(f"termcredit update: {o:.3f} s/step ({n / o:,.0f} tok/s), peak {peaks['ours']:,.0f} MiB")
    print(f"bare HF step:      {b:.3f} s/step ({n / b:,.0f} tok/s), peak {peaks['bare']:,.0f} MiB")
    print(f"RESULT ratio={(n / o) / (n / b):.2f} mem_ratio={peaks['ours'] / peaks['bare']:.2f}")


if __name__ == "__main__":
    main()

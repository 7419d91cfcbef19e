"""One training step of the tiny policy on a fixed batch: termcredit's update (PPO clipped loss,
masked log-probs, micro-batching with global counts, grad clipping, AdamW) against a bare
Hugging Face forward/backward/AdamW (cross-entropy with labels) on the same tokens.

Alternating runs, median of --repeats each; throughput = tokens in the batch / step time.
Last line: `RESULT ratio=<ours / bare tokens per s>`. Goal: >= 0.9.

Usage: .venv/bin/python benchmarks/train_step.py [--batch 8] [--seq 512] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from termcredit.trainer.loss import LossConfig
from termcredit.trainer.policy import load_policy
from termcredit.trainer.update import ppo_update


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--model", default="tiny")
    args = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    torch.manual_seed(0)
    policy = load_policy(args.model)
    vocab = policy.model.config.vocab_size
    seqs = [torch.randint(3, vocab, (args.seq,)).tolist() for _ in range(args.batch)]
    masks = [[0] * (args.seq * 3 // 5) + [1] * (args.seq - args.seq * 3 // 5) for _ in seqs]
    advs = [[(1.0 if i % 2 else -1.0) * m for m in mask] for i, mask in enumerate(masks)]
    old = policy.score(seqs, masks)
    ours_opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-6, weight_decay=0.0)
    bare_opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-6, weight_decay=0.0)
    ids = torch.tensor(seqs)
    labels = torch.tensor([[t if m else -100 for t, m in zip(s, mk)]
                           for s, mk in zip(seqs, masks)])

    def ours() -> None:
        ppo_update(policy, ours_opt, seqs, masks, advs, old, None, LossConfig(),
                   micro_batch=args.batch)

    def bare() -> None:
        policy.model.train()
        bare_opt.zero_grad(set_to_none=True)
        policy.model(input_ids=ids, labels=labels).loss.backward()
        bare_opt.step()

    ours(), bare()  # warm-up
    t_ours, t_bare = [], []
    for _ in range(args.repeats):
        for fn, acc in ((ours, t_ours), (bare, t_bare)):
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    n = args.batch * args.seq
    o, b = statistics.median(t_ours), statistics.median(t_bare)
    print(f"batch {args.batch} x {args.seq} tokens, {args.model} "
          f"({sum(p.numel() for p in policy.model.parameters()) / 1e6:.2f} M params)")
    print(f"termcredit update: {o:.2f} s/step ({n / o:,.0f} tok/s)")
    print(f"bare HF step:      {b:.2f} s/step ({n / b:,.0f} tok/s)")
    print(f"RESULT ratio={(n / o) / (n / b):.2f}")


if __name__ == "__main__":
    main()

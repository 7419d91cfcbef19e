"""The GPU path measured in one run: the update against a bare Hugging Face step at two real
model shapes, and generation (HF ``generate``, ``Policy.generate`` hf and static) against
the memory-bandwidth limit, on random-init Qwen2.5-shaped models (no download).

Parts, each in a process of its own with its own time limit, so a crash, an out-of-memory or
a slow compile in one loses nothing of the others:
  generate     batch 32 at 0.5B: tokens/s of HF generate, Policy.generate "hf", "static"
               eager and "static" compiled (CUDA graphs; its first call, compile included,
               timed apart), and the limit: bytes read per decode step (weights + the KV of
               the mean context) over the measured device copy bandwidth
  update-0.5b  termcredit's update vs a bare HF step, 8 x 2048 (benchmarks/train_step.py's
  update-1.5b  steps and timing), 4 x 4096: tokens/s ratio and peak-memory ratio
  vllm         vLLM's tokens/s on the same prompts, when vllm is importable (else skipped)
Every figure is a line `RESULT <part>.<key>=<value>`; each part ends with
`RESULT <part>.status=ok|failed|timeout|skipped`. Total on an H100: under ~8 minutes.

Usage: python benchmarks/gpu_path.py [--parts generate,update-0.5b,...]
       python benchmarks/gpu_path.py --smoke     # tiny shapes on the CPU, compile off (a test)
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_step import make_steps, time_steps  # noqa: E402

from termcredit.trainer.policy import Policy, load_policy, pad_batch  # noqa: E402

QWEN = dict(vocab_size=151936, tie_word_embeddings=True, max_position_embeddings=32768,
            rope_theta=1e6)
SHAPES: dict[str, dict[str, Any]] = {
    "0.5b": dict(QWEN, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                 num_attention_heads=14, num_key_value_heads=2),
    "1.5b": dict(QWEN, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                 num_attention_heads=12, num_key_value_heads=2),
    "smoke": dict(vocab_size=4096, tie_word_embeddings=True, hidden_size=64,
                  intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2),
}
# part -> (seconds allowed on a GPU, what it runs); a smoke part gets SMOKE_LIMIT_S
PART_LIMITS_S = {"generate": 240, "update-0.5b": 100, "update-1.5b": 120, "vllm": 150}
SMOKE_LIMIT_S = 300


def result(part: str, key: str, value: Any) -> None:
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    print(f"RESULT {part}.{key}={text}", flush=True)


def random_policy(shape: str, device: torch.device, generation: str = "hf") -> Policy:
    """A random-init Qwen2 model of ``shape`` (bf16 on CUDA), with the micro tokenizer (its
    ids are all below the vocabulary; the benchmarks feed random ids anyway)."""
    from transformers import AutoModelForCausalLM, Qwen2Config

    tok = load_policy("micro").tokenizer
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    with device:
        model = AutoModelForCausalLM.from_config(Qwen2Config(**SHAPES[shape]), dtype=dtype)
    return Policy(model.eval(), tok, name=f"random-{shape}", generation=generation)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], device: torch.device) -> float:
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t0


# ---------------------------------------------------------------------- parts
def part_update(part: str, shape: str, batch: int, seq: int, repeats: int,
                device: torch.device) -> None:
    policy = random_policy(shape, device)
    result(part, "params_M", sum(p.numel() for p in policy.model.parameters()) / 1e6)
    result(part, "tokens", batch * seq)
    steps = make_steps(policy, batch, seq)
    med, peaks = time_steps(steps, repeats, device.type == "cuda")
    result(part, "ours_s", med["ours"])
    result(part, "bare_s", med["bare"])
    result(part, "ratio", med["bare"] / med["ours"])  # tokens/s ours over bare
    if peaks:
        result(part, "ours_peak_mib", peaks["ours"])
        result(part, "bare_peak_mib", peaks["bare"])
        result(part, "mem_ratio", peaks["ours"] / peaks["bare"])
    for side, fn in steps.items():  # where each side's time goes, for the next fix
        for i, (name, ms) in enumerate(top_ops(fn, device)):
            result(part, f"{side}_top{i + 1}", f"{name}:{ms:.1f}ms")


def top_ops(fn: Callable[[], None], device: torch.device, n: int = 8
            ) -> list[tuple[str, float]]:
    """The n operators of one call with the most self time on the device (CPU off CUDA)."""
    from torch.profiler import ProfilerActivity, profile

    gpu = device.type == "cuda"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with profile(activities=acts) as prof:
        fn()
        sync(device)
    attr = "self_device_time_total" if gpu else "self_cpu_time_total"
    rows = sorted(prof.key_averages(), key=lambda e: getattr(e, attr, 0.0), reverse=True)
    return [(e.key.replace(" ", "_"), getattr(e, attr, 0.0) / 1e3) for e in rows[:n]]


def copy_bandwidth(device: torch.device, n_bytes: int) -> float:
    """Bytes per second of a device-to-device copy (read + write counted)."""
    src = torch.empty(n_bytes // 2, dtype=torch.bfloat16, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    reps = 10
    t = timed(lambda: [dst.copy_(src) for _ in range(reps)], device)
    return 2 * n_bytes * reps / t


def gen_prompts(batch: int, prompt: int, vocab: int) -> list[list[int]]:
    """Random ids, lengths prompt, prompt - 4, ... (left padding in play)."""
    g = torch.Generator().manual_seed(1)
    return [torch.randint(3, vocab, (prompt - 4 * (i % 4),), generator=g).tolist()
            for i in range(batch)]


def part_generate(shape: str, batch: int, prompt: int, new: int, device: torch.device,
                  compile_static: bool) -> None:
    from termcredit.trainer.static_gen import StaticGenerator

    part = "generate"
    policy = random_policy(shape, device)
    cfg = policy.model.config
    prompts = gen_prompts(batch, prompt, cfg.vocab_size)
    n_tok = batch * new
    result(part, "batch", batch)
    result(part, "prompt_tokens", prompt)
    result(part, "new_tokens", new)
    # the limit: every decode step reads the weights once and the KV of its context
    weights = sum(p.numel() * p.element_size() for p in policy.model.parameters())
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    elt = next(policy.model.parameters()).element_size()
    kv = (cfg.num_hidden_layers * 2 * batch * cfg.num_key_value_heads * head_dim
          * (prompt + new / 2) * elt)
    bw = copy_bandwidth(device, 1 << 30 if device.type == "cuda" else 1 << 25)
    result(part, "copy_GBps", bw / 1e9)
    result(part, "bytes_per_step_MB", (weights + kv) / 1e6)
    limit = batch * bw / (weights + kv)
    result(part, "limit_tok_s", limit)

    ids, attn = pad_batch(prompts, policy.pad_id, side="left", device=device)

    def hf_generate() -> None:
        out = policy.model.generate(input_ids=ids, attention_mask=attn, do_sample=True,
                                    temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=new,
                                    min_new_tokens=new, pad_token_id=policy.pad_id)
        assert out.shape[1] == ids.shape[1] + new

    def ours(generation: str) -> Callable[[], None]:
        def run() -> None:
            policy.generation = generation
            out = policy.generate(prompts, max_new_tokens=new, temperature=1.0, seed=0,
                                  stop_ids=())
            assert all(len(s.token_ids) == new for s in out)
        return run

    sides = [("hf_generate", hf_generate), ("policy_hf", ours("hf")),
             ("static_eager", ours("static"))]
    if compile_static:
        sides.append(("static", ours("static")))
    base = None
    for name, fn in sides:
        if name == "static_eager":
            policy._static = StaticGenerator(policy.model, compile=False)
        elif name == "static":
            policy._static = StaticGenerator(policy.model, compile=True)
        result(part, f"{name}_first_s", timed(fn, device))  # warm-up; compile for "static"
        t = min(timed(fn, device) for _ in range(2))
        result(part, f"{name}_tok_s", n_tok / t)
        base = base or n_tok / t
        result(part, f"{name}_vs_hf_generate", n_tok / t / base)
        result(part, f"{name}_of_limit", n_tok / t / limit)


def part_vllm(shape: str, batch: int, prompt: int, new: int, device: torch.device) -> None:
    """vLLM on the same random model and prompts (its weights saved to a temporary dir)."""
    import tempfile

    from vllm import LLM, SamplingParams  # type: ignore[import-not-found]

    policy = random_policy(shape, device)
    prompts = gen_prompts(batch, prompt, policy.model.config.vocab_size)
    with tempfile.TemporaryDirectory() as tmp:
        policy.save(tmp)
        del policy
        gc.collect()
        torch.cuda.empty_cache()
        llm = LLM(model=tmp, dtype="bfloat16", gpu_memory_utilization=0.5, seed=0)
        params = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=new, min_tokens=new,
                                ignore_eos=True)
        reqs = [{"prompt_token_ids": p} for p in prompts]
        result("vllm", "first_s", timed(lambda: llm.generate(reqs, params), device))
        t = statistics.median(timed(lambda: llm.generate(reqs, params), device) for _ in range(2))
        result("vllm", "tok_s", batch * new / t)


def run_part(name: str, smoke: bool) -> None:
    gpu = torch.cuda.is_available() and not smoke
    device = torch.device("cuda" if gpu else "cpu")
    if smoke:
        torch.set_num_threads(min(2, torch.get_num_threads()))
    if name == "generate":
        part_generate("smoke" if smoke else "0.5b", 4 if smoke else 32, 16 if smoke else 256,
                      8 if smoke else 256, device, compile_static=gpu)
    elif name.startswith("update-"):
        shape = name.removeprefix("update-")
        batch, seq = {"0.5b": (8, 2048), "1.5b": (4, 4096)}[shape]
        part_update(name, "smoke" if smoke else shape, 2 if smoke else batch,
                    64 if smoke else seq, 2 if smoke else 5, device)
    elif name == "vllm":
        if not gpu or importlib.util.find_spec("vllm") is None:
            result("vllm", "status", "skipped")  # no GPU or vllm not installed
            return
        part_vllm("0.5b", 32, 256, 256, device)
    result(name, "status", "ok")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default=",".join(PART_LIMITS_S),
                    help=f"comma-separated, of {', '.join(PART_LIMITS_S)}")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU")
    ap.add_argument("--part", help=argparse.SUPPRESS)  # run one part in this process
    args = ap.parse_args()
    if args.part:
        return run_part(args.part, args.smoke)
    import transformers

    gpu = torch.cuda.is_available() and not args.smoke
    result("env", "device", torch.cuda.get_device_name() if gpu else "cpu")
    result("env", "torch", torch.__version__)
    result("env", "transformers", transformers.__version__)
    t_all = time.perf_counter()
    for name in args.parts.split(","):
        if name not in PART_LIMITS_S:
            raise SystemExit(f"unknown part {name!r}: {', '.join(PART_LIMITS_S)}")
        limit = SMOKE_LIMIT_S if args.smoke else PART_LIMITS_S[name]
        argv = [sys.executable, __file__, "--part", name] + (["--smoke"] if args.smoke else [])
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv)  # its RESULT lines go straight to our stdout
        try:
            rc = proc.wait(timeout=limit)
            if rc != 0:
                result(name, "status", f"failed(rc={rc})")
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            result(name, "status", f"timeout({limit}s)")
        result(name, "wall_s", time.perf_counter() - t0)
    result("env", "total_s", time.perf_counter() - t_all)


if __name__ == "__main__":
    main()

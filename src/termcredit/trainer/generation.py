"""The `generation` setting's values (Policy.generate's KV caches), without importing torch:
"hf" a growing cache, one eager forward per token; "static" a fixed cache and a fixed-shape
decode step, compiled with CUDA graphs on CUDA (static_gen.py)."""

GENERATIONS = ("hf", "static")

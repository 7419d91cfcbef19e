#!/bin/bash
# Runs every test_ function of /tests/test_*.py with the standard library alone (pytest's start-up
# was most of a traced verifier's cost) and writes the reward the harness reads. -I: neither the
# cwd nor PYTHON* variables reach the import path; -S: no site-packages (the checks are stdlib).
mkdir -p /logs/verifier
if python3 -I -S -c 'import os, sys; sys.path.insert(0, "/tests"); failed = []
for mod in [__import__(f[:-3]) for f in sorted(os.listdir("/tests")) if f.startswith("test_") and f.endswith(".py")]:
    for name, test in [(n, f) for n, f in vars(mod).items() if n.startswith("test_") and callable(f)]:
        try: test()
        except Exception as e: failed.append(name); print(f"FAILED {name}: {e!r}", file=sys.stderr); __import__("traceback").print_exc()
print(f"{len(failed)} failed: {failed}" if failed else "all passed"); sys.exit(bool(failed))'; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi

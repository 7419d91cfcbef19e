#!/bin/bash
# Builds /app/repo: config/defaults.ini is added, edited, deleted, then more commits follow.
set -euo pipefail
n=0
commit() { n=$((n + 1)); GIT_AUTHOR_DATE="2024-05-0${n}T09:00:00Z" GIT_COMMITTER_DATE="2024-05-0${n}T09:00:00Z" git commit -q "$@"; }
git init -q -b main /app/repo && cd /app/repo
mkdir -p config
cat > app.py <<'PY'
import configparser
from pathlib import Path

cfg = configparser.ConfigParser()
if not cfg.read(Path(__file__).parent / "config" / "defaults.ini"):
    raise SystemExit("config/defaults.ini is missing")
print(f"{cfg['app']['name']} on port {cfg['server']['port']} with {cfg['server']['threads']} threads")
PY
printf '[app]\nname = shipyard\n\n[server]\nport = 8000\nthreads = 2\n' > config/defaults.ini
git add -A && commit -m "Initial app"
printf '[app]\nname = shipyard\n\n[server]\nport = 8080\nthreads = 8\n' > config/defaults.ini
commit -am "Tune server defaults"
printf '# Shipyard\n\nRun `python3 app.py`.\n' > README.md
git add README.md && commit -m "Add README"
git rm -q config/defaults.ini && printf 'local.ini\n' > config/.gitignore && git add config/.gitignore
commit -m "Cleanup: move config to deployment"
printf '# Shipyard\n\nRun `python3 app.py`. Config lives in config/.\n' > README.md
commit -am "Docs"

#!/bin/bash
# Builds /app/repo with main and feature diverged, then leaves a conflicted `git merge feature`.
set -euo pipefail
n=0
commit() { n=$((n + 1)); GIT_AUTHOR_DATE="2024-06-0${n}T09:00:00Z" GIT_COMMITTER_DATE="2024-06-0${n}T09:00:00Z" git commit -q "$@"; }
git init -q -b main /app/repo && cd /app/repo
printf '# service settings\nNAME = "uploader"\nTIMEOUT = 30\n\n# limits\nMAX_SIZE_MB = 10\n' > settings.py
printf 'from settings import NAME, TIMEOUT\n\nprint(NAME, TIMEOUT)\n' > main.py
git add -A && commit -m "Initial uploader"
git checkout -q -b feature
printf '# service settings\nNAME = "uploader"\nTIMEOUT = 45\nRETRIES = 3\nBACKOFF = 1.5\n\n# limits\nMAX_SIZE_MB = 10\n' > settings.py
printf 'from settings import BACKOFF, RETRIES\n\n\ndef delays():\n    return [BACKOFF ** i for i in range(RETRIES)]\n' > retry.py
git add -A && commit -m "Retry uploads"
git checkout -q main
printf '# service settings\nNAME = "uploader"\nTIMEOUT = 60\n\n# limits\nMAX_SIZE_MB = 25\n' > settings.py
commit -am "Longer timeout, bigger uploads"
printf '# uploader\n' > README.md && git add README.md && commit -m "README"
GIT_AUTHOR_DATE="2024-06-09T09:00:00Z" GIT_COMMITTER_DATE="2024-06-09T09:00:00Z" git merge feature >/dev/null 2>&1 || true
test -f .git/MERGE_HEAD  # the conflict this task is about

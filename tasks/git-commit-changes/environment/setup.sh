#!/bin/bash
# Builds /app/repo: two commits of history, then uncommitted work and junk in the tree.
set -euo pipefail
export GIT_AUTHOR_DATE="2024-03-01T10:00:00Z" GIT_COMMITTER_DATE="2024-03-01T10:00:00Z"
git init -q -b main /app/repo && cd /app/repo
mkdir -p src
printf '# blog\n\nA tiny blog engine.\n' > README.md
printf '__pycache__/\n' > .gitignore
printf 'def title(text):\n    return text.title()\n' > src/app.py
git add -A && git commit -q -m "Initial commit"
printf 'def title(text):\n    return text.strip().title()\n' > src/app.py
git commit -q -am "Strip titles"
# the work to commit
printf '# blog\n\nA tiny blog engine.\n\nPost URLs use slugify() from src/textutil.py.\n' > README.md
printf 'from textutil import slugify\n\n\ndef title(text):\n    return text.strip().title()\n\n\ndef url(text):\n    return "/posts/" + slugify(text)\n' > src/app.py
printf 'import re\n\n\ndef slugify(text):\n    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")\n' > src/textutil.py
# junk that must not be committed
printf 'DEBUG starting\n' > server.log
printf 'scratch\n' > src/notes.tmp
printf 'draft\n' > ideas.tmp

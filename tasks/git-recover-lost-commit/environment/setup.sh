#!/bin/bash
# Builds /app/site: work committed on a detached HEAD, then `git checkout main`, then main moves on.
set -euo pipefail
n=0
commit() { n=$((n + 1)); GIT_AUTHOR_DATE="2024-07-0${n}T09:00:00Z" GIT_COMMITTER_DATE="2024-07-0${n}T09:00:00Z" git commit -q "$@"; }
git init -q -b main /app/site && cd /app/site
mkdir -p pages
printf '<h1>About me</h1>\n<p>I build things.</p>\n' > pages/about.html
printf '<ul>\n  <li>lantern</li>\n</ul>\n' > pages/projects.html
printf 'title: My site\n' > site.yml
git add -A && commit -m "Site skeleton"
git checkout -q --detach
printf '<h1>About me</h1>\n<p>I build things and I write about them.</p>\n<p>Contact: me@example.com</p>\n' > pages/about.html
commit -am "Rewrite about page"
printf '<ul>\n  <li>lantern</li>\n  <li>shipyard</li>\n</ul>\n' > pages/projects.html
commit -am "Add shipyard project"
git checkout -q main 2>/dev/null
printf 'title: My site\ntheme: dark\n' > site.yml
commit -am "Dark theme"

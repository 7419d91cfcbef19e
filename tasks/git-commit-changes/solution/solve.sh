#!/bin/bash
cd /app/repo
printf '*.log\n*.tmp\n' >> .gitignore
git add -A && git commit -q -m 'Add slugify helper'

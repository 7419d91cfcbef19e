#!/bin/bash
cd /app/repo
sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' -e '/^TIMEOUT = 45$/d' settings.py
git add settings.py && git commit -q --no-edit

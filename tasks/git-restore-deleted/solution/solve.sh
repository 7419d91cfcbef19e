#!/bin/bash
cd /app/repo
git checkout "$(git rev-list -n 1 HEAD -- config/defaults.ini)^" -- config/defaults.ini
git commit -q -m 'Restore defaults.ini'

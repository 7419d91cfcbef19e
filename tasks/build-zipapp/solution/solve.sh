#!/bin/bash
mkdir -p /app/dist
python3 -m zipapp /app/tool/src -m 'wordstat.cli:main' -p '/usr/bin/env python3' -o /app/dist/wordstat

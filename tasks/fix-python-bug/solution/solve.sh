#!/bin/bash
# fix.patch: median of an even count, nearest-rank rounding up, population variance.
cd /app/stats && git apply /solution/fix.patch

#!/bin/bash
cd /app/inbox
for f in *; do mkdir -p "/app/sorted/${f##*.}" && mv "$f" "/app/sorted/${f##*.}/"; done

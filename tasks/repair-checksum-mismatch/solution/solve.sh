#!/bin/bash
cd /app/release && sha256sum -c SHA256SUMS 2>/dev/null | grep FAILED | cut -d: -f1 > /tmp/bad
cp "/app/mirror/$(cat /tmp/bad)" /app/release/

#!/usr/bin/env bash
# Headless Chromium for the run viewer's browser test (tests/integration/test_viewer_browser.py),
# from the Debian packages: installed with apt as root when missing; idempotent. Prints the
# browser's path on its last line.
set -euo pipefail
find_browser() { command -v chromium || command -v chromium-browser || true; }
browser=$(find_browser)
if [ -z "$browser" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium (apt)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
    browser=$(find_browser)
  fi
fi
if [ -z "$browser" ]; then
  echo "chromium is missing: install the Debian package chromium (apt-get install chromium)" >&2
  exit 1
fi
echo "$browser"

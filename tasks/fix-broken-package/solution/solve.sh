#!/bin/bash
# fix.patch: relative import, the JSON key (qty), the price attribute, total units.
cd /app/inventory && git apply /solution/fix.patch

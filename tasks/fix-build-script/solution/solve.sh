#!/bin/bash
# fix.patch: create dist/, the VERSION typo, every placeholder, CSS in ORDER, cp -r.
cd /app/webapp && git apply /solution/fix.patch

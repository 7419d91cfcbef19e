#!/bin/bash
# Builds dist/ (see README.md).
set -e

VERSION=$(cat VERSION)

sed "s/{{VERSION}}/$VERISON/" src/index.html > dist/index.html

for f in src/css/*.css; do
  cat "$f"
done > dist/app.css

cat src/js/*.js > dist/app.js

cp assets dist/assets
echo "built dist/ for version $VERSION"

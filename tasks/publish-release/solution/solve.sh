#!/bin/bash
cd /app
V=$(cat VERSION)
mkdir -p rel/$V
cp build/* rel/$V/
ls rel/$V > /tmp/files
mv /tmp/files rel/$V/MANIFEST
ln -sfn $V rel/current

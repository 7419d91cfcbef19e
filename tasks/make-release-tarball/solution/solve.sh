#!/bin/bash
cd /app/project && v=$(cat VERSION) && mkdir -p /app/dist
tar -czf "/app/dist/lantern-$v.tar.gz" --transform "s,^,lantern-$v/," -T MANIFEST

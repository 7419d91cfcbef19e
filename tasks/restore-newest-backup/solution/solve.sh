#!/bin/bash
ls /app/backups/site-*.tar.gz | sort | tail -n 1 > /tmp/newest
tar -xzf "$(cat /tmp/newest)" -C /app site/config/settings.yml

#!/bin/bash
mkdir -p /tmp/rel && tar -xzf /app/dist/release.tar.gz -C /tmp/rel
sed -i 's/^log_level = .*/log_level = warn/' /tmp/rel/*/conf/production.ini
tar -czf /app/dist/release.tar.gz -C /tmp/rel .

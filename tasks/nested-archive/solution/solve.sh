#!/bin/bash
mkdir -p /app/work && tar -xzf /app/backup.tar.gz -C /app/work
for t in /app/work/backup/*.tar; do tar -xf "$t" -C /app/work; done
zcat /app/work/*/*.gz | sed -n 's/^KEY=//p' > /app/key.txt

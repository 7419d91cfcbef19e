#!/bin/bash
zcat -f /app/logs/access.log* | awk '$9 ~ /^5/ { n[$1]++ } END { for (ip in n) print ip, n[ip] }' \
  | sort -k2,2nr | head -n 1 > /app/answer.txt

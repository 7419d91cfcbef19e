#!/bin/bash
cd /app && export LC_ALL=C
grep 'Accepted password' auth.log | grep -oE 'from [0-9.]+' | cut -d' ' -f2 | sort -u > accepted.txt
grep 'Failed password' auth.log | grep -oE 'from [0-9.]+' | cut -d' ' -f2 | sort | uniq -c | awk '$1 >= 5 { print $2, $1 }' > failed.txt
awk 'NR == FNR { ok[$1]; next } !($1 in ok)' accepted.txt failed.txt | sort -k2,2nr -k1,1 > blocklist.txt

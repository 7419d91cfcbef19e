#!/bin/bash
tr -cs 'A-Za-z' '\n' < /app/book.txt | tr 'A-Z' 'a-z' | grep . | LC_ALL=C sort | uniq -c \
  | LC_ALL=C sort -k1,1nr -k2,2 | head -n 10 | awk '{ print $2, $1 }' > /app/top10.txt

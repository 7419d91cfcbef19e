#!/bin/bash
cd /app/photos
md5sum * | LC_ALL=C sort -k1,1 -k2,2 | awk 'seen[$1]++ { print $2 }' | LC_ALL=C sort > /app/removed.txt
xargs -r rm -- < /app/removed.txt

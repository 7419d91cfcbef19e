#!/bin/bash
cd /data
N=$(ls orders | wc -l)
cat orders/*.txt > /tmp/all
sort /tmp/all > /tmp/s
uniq -c /tmp/s > summary.txt
echo $N > count.txt
mv orders/*.txt done/

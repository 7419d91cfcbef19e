#!/bin/bash
cd /app/users
sort -u a.txt b.txt > /tmp/all.txt
sort -u /app/banned.txt > /tmp/ban.txt
comm -23 /tmp/all.txt /tmp/ban.txt > /tmp/ok.txt
wc -l < /tmp/ok.txt > /app/out/count.txt
mv /tmp/ok.txt /app/out/users.txt
rm a.txt b.txt

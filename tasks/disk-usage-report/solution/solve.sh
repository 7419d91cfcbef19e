#!/bin/bash
find /app/data -type f -printf '%s %p\n' | sort -k1,1nr | head -n 5 > /app/largest.txt
find /app/data -type f -empty -delete

#!/bin/bash
awk -F, 'NR == 1 || ($3 == "EU" && $5 == "refunded")' /app/data/orders.csv > /app/stage/eu-refunds.csv
awk -F, 'NR > 1 { n++; s += $4 } END { printf "%d %.2f\n", n, s }' /app/stage/eu-refunds.csv > /app/summary.txt

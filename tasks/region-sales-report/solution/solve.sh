#!/bin/bash
awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
         { total[$col["region"]] += $col["units"] * $col["unit_price"] }
         END { for (r in total) printf "%s,%.2f\n", r, total[r] }' /app/data/sales-*.csv > /app/totals.tmp
{ echo region,revenue; sort -t, -k2,2nr /app/totals.tmp; } > /app/report.csv

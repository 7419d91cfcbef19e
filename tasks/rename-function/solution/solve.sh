#!/bin/bash
grep -rlw --include='*.py' calc_total /app/shop | xargs sed -i 's/\bcalc_total\b/compute_total/g'

#!/bin/bash
grep 'status=FAILED' /app/logs/scheduler.log | grep -o 'J-[0-9]*' > /tmp/job
sed -i "s/^retry_job=.*/retry_job=$(cat /tmp/job)/" /app/state/scheduler.state

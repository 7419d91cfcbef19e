#!/bin/bash
grep -l '^role = primary' /app/conf/*.conf > /tmp/primary
sed -i 's/^port = .*/port = 6432/' "$(cat /tmp/primary)"

#!/bin/bash
chmod 755 /app/site/bin/*.sh && chmod 640 /app/site/conf/* && chmod 600 /app/site/conf/*.key
find /app/site/public -type d -exec chmod 755 {} + -o -type f -exec chmod 644 {} +
chmod 1777 /app/site/uploads

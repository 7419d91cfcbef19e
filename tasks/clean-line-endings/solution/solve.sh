#!/bin/bash
find /app/docs -name '*.md' -exec sed -i 's/\r$//; s/[ \t]*$//' {} +

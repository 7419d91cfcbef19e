#!/bin/bash
grep -rhoE '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]+' /app/mail | tr 'A-Z' 'a-z' | LC_ALL=C sort -u > /app/addresses.txt

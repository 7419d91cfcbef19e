#!/bin/bash
# Runs the state checks with the preinstalled pytest and writes the reward the harness reads.
mkdir -p /logs/verifier
if python3 -m pytest -q -p no:cacheprovider /tests/test_*.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi

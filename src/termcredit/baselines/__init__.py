"""Baseline advantage estimators, one per file, each registered in termcredit.estimators."""

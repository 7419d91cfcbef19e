"""`termcredit refine`: SFT data from successful trials, minus the steps the dependency graph
proves did not contribute, each refined trajectory replay-checked (select.py: the rule;
dataset.py: the chat lines; run.py: trials in, replays, the report)."""

from .select import RefineOptions, StepDecision, decide, refined_commands

__all__ = ["RefineOptions", "StepDecision", "decide", "refined_commands"]

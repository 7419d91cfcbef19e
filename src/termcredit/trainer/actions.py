"""The text protocol moved to the harness (harness/actions.py), beside the text environment
that acts on it; these names stay importable from here for code written against them."""

from ..harness.actions import (
    DONE_WORDS,
    NUL_BYTE,
    SYSTEM_PROMPT,
    Action,
    format_observation,
    invalid_observation,
    parse_action,
)

__all__ = ["DONE_WORDS", "NUL_BYTE", "SYSTEM_PROMPT", "Action", "format_observation",
           "invalid_observation", "parse_action"]

"""wordstat: line, word and character counts, plus the longest word."""
__version__ = "0.3.0"

"""Stock reports."""

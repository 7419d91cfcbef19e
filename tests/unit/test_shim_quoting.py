"""The shim hands each command to bash as $'...' text; any string must survive unchanged."""

import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from termcredit.sandbox.shim import ansi_c_quote as quote


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=40))
def test_ansi_c_quote_round_trips_through_bash(text):
    out = subprocess.run(["bash", "-c", f"v={quote(text)}; printf %s \"$v\""],
                         capture_output=True).stdout
    try:
        expected = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # lone surrogates (not from any bytes) become '?'
        expected = text.encode("utf-8", "replace")
    assert out == expected

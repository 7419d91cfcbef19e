"""Typed-value matcher: which earlier stdout a command reuses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from termcredit.depgpo.stdout_reuse import (
    ReuseConfig,
    StdoutReuse,
    classify,
    extract_values,
    stdout_sources,
    text_tokens,
)

SETTINGS = settings(max_examples=200, deadline=None, database=None)


# ---------------------------------------------------------------- extraction
@pytest.mark.parametrize("value", [
    "42", "-17", "3.14", "0.5", "-0.25", "1e-5", "90417",  # numbers
    "/app/data/input.csv", "src/main.py", "./out/x.txt", "~/notes.md",  # paths
    "input.csv", "os.path.join", "2.31.0", "127.0.0.1",  # names, versions, addresses
    "user_id", "parseConfig", "my-service", "_private_id", "XYZZY",  # identifiers
    "a3f9c1e", "deadbeef01",  # hashes
])
def test_extracts_typed_values(value):
    assert value in extract_values(f"result: {value}\n")


@pytest.mark.parametrize("token", [
    "0", "1", "7", "-3",  # trivially small numbers
    "the", "file", "total", "Error", "python3", "echo", "with",  # common words
    "abc", "x1", "ab.c"[:3],  # too short
    "/", "/tmp", "/app", "/dev/null", "./", "..",  # paths every session names
    "drwxr-xr-x", "-rw-r--r--",  # ls permissions
    "12ab",  # short hex / junk
])
def test_ignores_noise(token):
    assert token not in extract_values(f"{token}\n")


def test_types():
    assert classify("42") == "number"
    assert classify("a3f9c1e2") == "hash"
    assert classify("abcdefab") == "identifier"  # no digit: a word, not a hash
    assert classify("1234567") == "number"
    assert classify("/app/x.txt") == "path"
    assert classify("data.csv") == "name"
    assert classify("fooBar") == "identifier"
    assert classify("") is None


def test_path_yields_basename_and_relative_form():
    vals = extract_values("./build/out/result.bin\n/app/data/input.csv\n")
    assert {"./build/out/result.bin", "build/out/result.bin", "result.bin",
            "/app/data/input.csv", "input.csv"} <= vals


def test_punctuation_is_stripped():
    vals = extract_values("Answer is 90417. Saved to /app/out.txt, id=user_42; (token_xyz)")
    assert {"90417", "/app/out.txt", "user_42", "token_xyz"} <= vals
    assert "90417." not in vals and "id=user_42" not in vals


def test_quoted_multi_word_strings():
    vals = extract_values('{"name": "Alice Smith", "city": "Oslo"}')
    assert "Alice Smith" in vals
    assert "Alice" in vals and "Oslo" in vals  # single words come as tokens


def test_thresholds_are_configurable():
    cfg = ReuseConfig(min_number_chars=1, min_identifier_len=6, min_hex_len=10)
    vals = extract_values("7 abcd_e 3f9c1e2a long_name", cfg)
    assert "7" in vals and "abcd_e" in vals and "long_name" in vals
    assert "3f9c1e2a" not in vals  # below the hex length (and digit-led: no identifier)
    assert "3f9c1e2a" in extract_values("3f9c1e2a")


def test_bad_link_mode_rejected():
    with pytest.raises(ValueError):
        ReuseConfig(link="latest")


# ---------------------------------------------------------------- command tokens
def test_text_tokens_split_on_shell_punctuation():
    toks = text_tokens('grep -n "user_42" /app/data/in.csv | head -5 > out=90417')
    assert {"grep", "n", "user_42", "/app/data/in.csv", "head", "5", "out", "90417"} <= toks


def test_text_tokens_expand_paths():
    toks = text_tokens("cat /app/data/in.csv")
    assert {"/app/data/in.csv", "app/data/in.csv", "data/in.csv", "in.csv", "/app",
            "/app/data"} <= toks


# ---------------------------------------------------------------- linking
def link(instruction: str, *pairs: tuple[str, str], **cfg) -> list[dict[int, tuple[str, ...]]]:
    return stdout_sources(instruction, list(pairs), ReuseConfig(**cfg))


def test_value_from_stdout_links_consumer():
    out = link("", ("cat /app/input.txt", "code: 90417\n"), ("echo 90417 > /tmp/a", ""))
    assert out == [{}, {0: ("90417",)}]


def test_language_keywords_are_not_values():
    # an awk script's keywords reappear in the fix the agent writes; only its own names count
    script = 'BEGIN { FS="," } { total_q3 += $3 } END { print FILENAME, total_q3 }\n'
    fix = "awk 'BEGIN { FS=\",\" } { s += $3 } END { print FILENAME, s }' sales.csv > out"
    assert link("", ("cat process_sales.awk", script), (fix, ""))[1] == {}
    uses_name = "awk '{ total_q3 += $3 } END { print total_q3 }' sales.csv > out"
    assert link("", ("cat process_sales.awk", script), (uses_name, ""))[1] == {
        0: ("total_q3",)}
    for word in ("BEGIN", "FILENAME", "print", "SELECT", "__init__", "isinstance", "elif"):
        assert classify(word) is None, word


def test_whole_token_only():
    prods = ("cat in", "90417 user_42 data.csv\n")
    assert link("", prods, ("echo 904170 xuser_42 mydata.csv data.csv2", ""))[1] == {}
    assert link("", prods, ("echo x=90417,user_42:data.csv", ""))[1] == {
        0: ("90417", "data.csv", "user_42")}


def test_basename_in_consumer_path():
    out = link("", ("ls /app/data", "input.csv\nnotes.txt\n"),
               ("wc -l /app/data/input.csv", ""))
    assert out[1] == {0: ("input.csv",)}


def test_full_path_from_find_used_as_directory_prefix():
    out = link("", ("find / -name 'conf*'", "/opt/service/config\n"),
               ("cat /opt/service/config/main.yml", ""))
    assert out[1] == {0: ("/opt/service/config",)}


def test_instruction_values_excluded():
    instr = "Read /app/input.txt, sum column total_sales and write 90417 to /app/answer.txt."
    out = link(instr, ("cat /app/input.txt", "total_sales 90417 /app/input.txt 5521\n"),
               ("echo 90417 5521 total_sales > /app/answer.txt", ""))
    assert out[1] == {0: ("5521",)}


def test_values_typed_by_the_agent_before_the_output_are_not_new():
    # the producer echoes what its own command already said; an earlier command typed 777777
    out = link("", ("echo 777777", ""),
               ("grep -c user_42 log; echo 777777", "user_42: 12345\n777777\n"),
               ("echo user_42 777777 12345", ""))
    assert out[2] == {1: ("12345",)}


def test_most_recent_and_earliest_producer():
    pairs = [("cat a", "value 90417\n"), ("cat b", "again 90417\n"), ("echo 90417", "")]
    assert stdout_sources("", pairs)[2] == {1: ("90417",)}
    assert stdout_sources("", pairs, ReuseConfig(link="earliest"))[2] == {0: ("90417",)}


def test_value_keeps_linking_after_first_use():
    out = link("", ("cat a", "90417\n"), ("echo 90417 > x", ""), ("echo 90417 > y", ""))
    assert out[1] == {0: ("90417",)} and out[2] == {0: ("90417",)}


def test_own_stdout_never_a_source_and_no_future_links():
    m = StdoutReuse("")
    assert m.add(0, "echo hi", "token_abc\n") == {}
    assert m.add(1, "cat token_abc", "token_abc\n") == {0: ("token_abc",)}


def test_multi_word_phrase_reuse():
    out = link("", ("cat people.json", '{"name": "Alice Smith"}\n'),
               ("echo 'Alice Smith' > /app/a.txt", ""), ("echo 'Alice Smithers'", ""))
    assert out[1] == {0: ("Alice", "Alice Smith", "Smith")}
    assert out[2] == {0: ("Alice",)}  # "Alice Smith" glued to "ers" is not the phrase


def test_no_flow_without_shared_values():
    out = link("", ("ls -la /app", "total 8\ndrwxr-xr-x 2 root root 4096 Dec 10 12:00 .\n"),
               ("echo hello > /app/answer.txt", ""))
    assert out[1] == {}


@SETTINGS
@given(st.text(max_size=300), st.text(max_size=200))
def test_never_crashes_and_consumer_values_are_its_tokens(stdout, command):
    found = stdout_sources("", [("p", stdout), (command, "")])[1]
    toks = text_tokens(command)
    for values in found.values():
        for v in values:
            assert v in toks or v in command

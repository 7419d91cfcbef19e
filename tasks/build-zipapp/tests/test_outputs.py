import os
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

APP = Path("/app/dist/wordstat")


def test_is_an_executable_zipapp():
    assert APP.read_bytes().startswith(b"#!/usr/bin/env python3\n")
    assert zipfile.is_zipfile(APP)
    names = zipfile.ZipFile(APP).namelist()
    assert "__main__.py" in names and "wordstat/cli.py" in names
    assert os.stat(APP).st_mode & stat.S_IXUSR


def test_runs_without_the_source(tmp_path):
    sample = tmp_path / "sample.txt"
    sample.write_text("The quick brown fox\njumps over the extraordinarily lazy dog\n")
    copy = tmp_path / "wordstat"
    shutil.copy2(APP, copy)
    out = subprocess.run([str(copy), str(sample)], cwd="/", capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("wordstat 0.3.0: 2 lines, 10 words, 60 chars, "
                                  "longest word 'extraordinarily'")

"""The code base stays ruff clean and the engine mypy clean (the README's test
command is all CI runs)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "relgraph", "relations", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_engine_type_checks():
    pytest.importorskip("mypy")  # in the test extra, so CI runs it
    proc = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

"""The documentation site builds with MkDocs in strict mode: any warning fails."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")


def test_docs_build_without_warnings(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-4000:]
    exploring = (tmp_path / "api" / "exploring" / "index.html").read_text()
    relations = (tmp_path / "api" / "relations" / "index.html").read_text()
    assert "RewriteSpace" in exploring and "register" in relations
    assert "value_and_grad" in (tmp_path / "api" / "gradients" / "index.html").read_text()
    notebook = (tmp_path / "notebooks" / "03-exploring" / "index.html").read_text()
    assert "ac_normalo" in notebook and "dot_distributeo" in notebook

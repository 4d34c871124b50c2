"""The engine finds the standard library through its registry, never by importing it."""

import subprocess
import sys

import pytest

import relgraph.rewriting.library as library
from relgraph.exceptions import QueryError, RegistrationError


def test_an_engine_that_never_imported_the_library_finds_it_by_entry_point():
    script = (
        "import sys, relgraph\n"
        "assert 'relations' not in sys.modules\n"
        "from relgraph.rewriting.library import default_library\n"
        "print(default_library().name, 'fast_run' in default_library().tags)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["relations", "True"]


def test_no_library_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(library, "_LIBRARIES", {})
    monkeypatch.setattr(library, "entry_points", lambda group: [])
    with pytest.raises(QueryError, match="import relations"):
        library.default_library()


def test_a_second_database_under_a_taken_name_is_refused(monkeypatch):
    monkeypatch.setattr(library, "_LIBRARIES", {})
    first = library.register_library("mine", object(), {"t": "a tag"})
    assert library.register_library("mine", first.db, {}) is first
    with pytest.raises(RegistrationError, match="'mine'"):
        library.register_library("mine", object(), {})
    assert library.default_library() is first

import subprocess
import sys

import pytest

from relgraph.cli import main, parse_symbols

SEED = "A:matrix,B:matrix,x:vector,y:vector,z:vector,w:vector"


def test_rewrite_prints_the_result(capsys):
    assert main(["rewrite", "A @ (x + y)", "--include", "linalg", "--symbols", SEED]) == 0
    assert capsys.readouterr().out.strip() == "((A @ x) + (A @ y))"


def test_profile_and_check(capsys):
    argv = [
        "rewrite",
        "A @ (x + (y + B @ (z + w)))",
        "--include",
        "linalg",
        "--symbols",
        SEED,
        "--profile",
        "--check",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "((A @ x) + (A @ y) + (A @ (B @ z)) + (A @ (B @ w)))"
    assert "pass 1: (dot_distributeo, 2)" in out
    assert "check rewritten (numpy)" in out and "(same)" in out


def test_compile_runs_the_whole_pipeline(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    argv = [
        "rewrite",
        "exp(A @ (x + y)) * 2.0",
        "--include",
        "linalg",
        "--symbols",
        "A:matrix,x:vector,y:vector",
        "--compile",
        "--size",
        "5",
    ]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "(exp(((A @ x) + (A @ y))) * 2.0)"
    assert lines[1].startswith("check rewritten (numpy)") and lines[1].endswith("(same)")
    assert lines[2].startswith("check compiled (Numba)") and lines[2].endswith("(same)")
    assert lines[3].startswith("compile + first call")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["rewrite", "x.__class__", "--include", "linalg", "--symbols", "x:vector"], "attribute"),
        (["rewrite", "A @ x", "--include", "nope", "--symbols", "A:matrix,x:vector"], "'nope'"),
        (["rewrite", "A @ x", "--include", "linalg", "--symbols", "A:cube"], "bad symbol spec"),
        (["rewrite", "A @ x", "--include", "linalg", "--symbols", "A:matrix:float99"], "float99"),
    ],
)
def test_bad_input_exits_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("relgraph: error:") and message in err


EXPLORE = ["explore", "A @ x + A @ y + A @ z + A @ w", "--include", "linalg", "canonicalize"]


def test_explore_prints_best_cost_and_derivation(capsys):
    assert main([*EXPLORE, "--symbols", SEED, "--max-terms", "1000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "(A @ (x + y + z + w))"
    assert lines[1] == "cost 11 (start 43)"
    assert "explored 1000 terms" in lines[2] and "cut off by max_terms" in lines[2]
    assert lines[3] == "derivation (2 steps):"
    assert lines[5].startswith("  1. ac_normalo (backward)")
    assert lines[6].startswith("  2. dot_distributeo (backward)")


def test_explore_budgets_and_directions(capsys):
    argv = [*EXPLORE, "--symbols", SEED, "--max-depth", "1", "--directions", "forward"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "cut off by max_depth" in out and "backward" not in out


def test_explore_svg(capsys, tmp_path, monkeypatch):
    from relgraph import display

    target = tmp_path / "space.svg"
    argv = [*EXPLORE, "--symbols", SEED, "--max-terms", "50", "--svg", str(target)]
    if display.has_dot():
        assert main(argv) == 0 and "<svg" in target.read_text()
        assert main([*argv[:-1], str(tmp_path / "no" / "dir.svg")]) == 2
        assert "cannot write --svg" in capsys.readouterr().err
    monkeypatch.setattr(display, "has_dot", lambda: False)
    assert main(argv) == 2
    assert "--svg needs Graphviz's `dot`" in capsys.readouterr().err


def test_explore_bad_budget(capsys):
    assert main([*EXPLORE, "--symbols", SEED, "--max-terms", "0"]) == 2
    assert "--max-terms must be positive" in capsys.readouterr().err


def test_parse_symbols():
    syms = parse_symbols("A:matrix, x:vector:float32 ,s:scalar")
    assert syms["x"].type.dtype.name == "float32" and syms["s"].type.ndim == 0


def test_console_script_entry_point():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "relgraph.cli",
            "rewrite",
            "A @ (x + y)",
            "--include",
            "linalg",
            "--symbols",
            "A:matrix,x:vector,y:vector",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "((A @ x) + (A @ y))"
    proc = subprocess.run(
        [sys.executable, "-m", "relgraph.cli", "rewrite"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2

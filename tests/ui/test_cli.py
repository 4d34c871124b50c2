import subprocess
import sys

import pytest

import relgraph as rg
import relgraph.ui.cli
from relgraph.ui.cli import main, parse_symbols

SEED = "A:matrix,B:matrix,x:vector,y:vector,z:vector,w:vector"
LOGISTIC = "docs/examples/logistic.py"


def test_rewrite_prints_the_result(capsys):
    assert main(["rewrite", "A @ (x + y)", "--include", "linalg", "--symbols", SEED]) == 0
    first, cost = capsys.readouterr().out.splitlines()
    assert first == "((A @ x) + (A @ y))" and cost.startswith("cost 21 (input 11); rewritten in")


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
    assert lines[0] == "(exp((A @ x) + (A @ y)) * 2.0)"
    assert lines[2].startswith("check rewritten (numpy)") and lines[2].endswith("(same)")
    assert lines[3].startswith("check compiled (Numba)") and lines[3].endswith("(same)")
    assert lines[4].startswith("compile + first call") and "numpy on the input" in lines[4]


def test_jit_runs_a_numpy_function_from_a_file(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    target = f"{LOGISTIC}:log_likelihood"
    argv = ["jit", target, "--args", "X:50x3,w:3,y:50", "--scale", "30"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "traced:    sum((y * (X @ w)) - log(1 + exp(X @ w)))"
    assert lines[1] == "rewritten: sum((y * (X @ w)) - softplus(X @ w))"
    assert lines[2].startswith("cost 15 (traced 23); trace")
    assert lines[3].startswith("first result after ")
    assert "(numpy tier); compiled kernel ready after" in lines[3]
    assert lines[4].startswith("output 0: numpy gives -inf (it overflows or has no value); ")
    assert lines[4].endswith("finite: the rewritten program avoids it")
    assert lines[5].startswith("per call: rg.jit")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["rewrite", "x.__class__", "--include", "linalg", "--symbols", "x:vector"], "attribute"),
        (["jit", "nofile.py:f", "--args", "x:3"], "no Python file nofile.py"),
        (["jit", LOGISTIC, "--args", "x:3"], "expected FILE.py:FUNCTION"),
        (["jit", f"{LOGISTIC}:g", "--args", "x:3"], "defines no function 'g'"),
        (["jit", f"{LOGISTIC}:log_likelihood", "--args", "X:3x"], "bad --args"),
        (["jit", f"{LOGISTIC}:log_likelihood", "--args", "X:3:f9"], "no dtype"),
        (
            ["jit", f"{LOGISTIC}:log_likelihood", "--args", "X:3x2,w:2"],
            "missing a required argument: 'y'",
        ),
        (["jit", f"{LOGISTIC}:log_likelihood", "--args", "X:3x2", "--include", "nope"], "'nope'"),
        (
            ["jit", f"{LOGISTIC}:log_likelihood", "--args", "X:3x2", "--relations", "nomodule:r"],
            "bad --relations 'nomodule:r': No module named 'nomodule'",
        ),
        (
            ["jit", f"{LOGISTIC}:log_likelihood", "--args", "X:3x2", "--relations", "math:pi"],
            "--relations: a relation must be a goal constructor rel(a, b), got 3.14",
        ),
        (["rewrite", "A @ x", "--include", "nope", "--symbols", "A:matrix,x:vector"], "'nope'"),
        (["rewrite", "A @ x", "--include", "linalg", "--symbols", "A:cube"], "bad symbol spec"),
        (["rewrite", "A @ x", "--include", "linalg", "--symbols", "A:matrix:float99"], "float99"),
        (["rewrite", "x + 1", "--symbols", "x:vector:U5"], "unsupported dtype <U5"),
        (["rewrite", "x + 1", "--symbols", "x:vector:V8"], "unsupported dtype |V8"),
        (["rewrite", "x + 1", "--symbols", "x:vector:object"], "unsupported dtype object"),
        (["rewrite", "x + 1", "--symbols", "x:vector:datetime64"], "unsupported dtype"),
        (["rewrite", "x + 1", "--symbols", "x:vector,x:matrix"], "'x' is declared twice"),
        (["rewrite", "x + 1", "--symbols", "x:vector:3x4"], "a vector has 1 dimension"),
        (["rewrite", "exp(x)", "--symbols", "x:vector:float16", "--compile"], "float16"),
        (["rewrite", "A @ x", "--symbols", "A:matrix:3x4,x:vector:5"], "inner dimensions"),
        (
            ["rewrite", "exp(x)", "--symbols", "x:vector", "--check", "--size", "100000000000"],
            "does not fit in memory",
        ),
        (
            [
                "rewrite",
                "x + 1",
                "--include",
                "fast_run",
                "--exclude",
                "fast_run",
                "--symbols",
                "x:vector",
            ],
            "selects no relation",
        ),  # fmt: skip
    ],
)
def test_bad_input_exits_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("relgraph: error:") and message in err


EXPLORE = ["explore", "A @ x + A @ y + A @ z + A @ w", "--include", "linalg", "canonicalize"]


def test_explore_prints_best_cost_and_derivation(capsys):
    assert main([*EXPLORE, "--symbols", SEED]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "(A @ (x + y + z + w))"
    assert lines[1] == "cost 11 (start 43)"
    assert "e-graph of" in lines[2] and "stopped by schedule" in lines[2]
    assert lines[3] == "derivation (2 steps):"
    assert lines[5].startswith("  1. flatteno (forward)")
    assert lines[6].startswith("  2. dot_distributeo (backward)")


def test_explore_breadth_first(capsys):
    argv = [*EXPLORE, "--symbols", SEED, "--method", "bfs", "--max-terms", "1000"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "(A @ (x + y + z + w))" and "explored 1000 terms" in lines[2]
    assert lines[5].startswith("  1. dot_distributeo (backward)")


def test_explore_budgets_and_directions(capsys):
    argv = [*EXPLORE, "--symbols", SEED, "--method", "bfs", "--max-depth", "1",
            "--directions", "forward"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "cut off by max_depth" in out and "backward" not in out
    argv = [*EXPLORE, "--symbols", SEED, "--directions", "forward", "--timeout", "2"]
    assert main(argv) == 0
    assert "backward" not in capsys.readouterr().out
    assert main([*EXPLORE, "--symbols", SEED, "--max-depth", "1"]) == 2
    assert "budgets of --method bfs" in capsys.readouterr().err


def test_explore_svg(capsys, tmp_path, monkeypatch):
    from relgraph.ui import display

    target = tmp_path / "space.svg"
    argv = [*EXPLORE, "--symbols", SEED, "--max-iterations", "1", "--svg", str(target)]
    if display.has_dot():
        assert main(argv) == 0 and "<svg" in target.read_text()
        assert main([*argv[:-1], str(tmp_path / "no" / "dir.svg")]) == 2
        assert "cannot write --svg" in capsys.readouterr().err
    monkeypatch.setattr(display, "has_dot", lambda: False)
    assert main(argv) == 2
    assert "--svg needs Graphviz's `dot`" in capsys.readouterr().err


def test_explore_bad_budget(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*EXPLORE, "--symbols", SEED, "--max-terms", "0"])
    assert exit_.value.code == 2
    assert "--max-terms: must be at least 1, got 0" in capsys.readouterr().err


def test_parse_symbols():
    syms = parse_symbols("A:matrix, x:vector:float32 ,s:scalar")
    assert syms["x"].type.dtype.name == "float32" and syms["s"].type.ndim == 0
    shaped = parse_symbols("A:matrix:3x4,x:vector:4:float32,y:vector:int8:5")
    assert shaped["A"].type.shape == (3, 4) and shaped["x"].type.shape == (4,)
    assert shaped["y"].type.dtype.name == "int8" and shaped["y"].type.shape == (5,)


def test_names_are_normalised_as_python_normalises_identifiers(capsys):
    # A fullwidth x is the identifier x to Python's parser, and so to --symbols.
    assert "x" in parse_symbols("\uff58:vector")
    assert main(["rewrite", "\uff58 * 1", "--symbols", "\uff58:vector"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "x"


def test_without_include_the_default_pipeline_runs(capsys):
    assert main(["rewrite", "log(1 + x * 1)", "--symbols", "x:vector"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "log1p(0 + x)"  # 0.0 at x = -0.0


def test_every_option_has_help_text():
    from relgraph.ui.cli import _parser

    parser = _parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, sub in commands.items():
        for action in sub._actions:
            assert action.help, f"relgraph {name} {action.option_strings or action.dest}"


def test_version_and_tags(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("relgraph ")
    assert main(["tags"]) == 0
    out = capsys.readouterr().out
    assert "fast_run" in out and "  canonicalize\n" in out and "dot_distributeo" in out


def test_bad_size_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["rewrite", "x + 1", "--symbols", "x:vector", "--check", "--size", "-1"])
    assert exit_.value.code == 2 and "--size: must be at least 1" in capsys.readouterr().err


def test_console_script_entry_point():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "relgraph.ui.cli",
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
    assert proc.returncode == 0 and proc.stdout.splitlines()[0] == "((A @ x) + (A @ y))"
    proc = subprocess.run(
        [sys.executable, "-m", "relgraph.ui.cli", "rewrite"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2


def test_trace_prints_every_rewrite_in_order(capsys):
    argv = ["rewrite", "A @ (x + y)", "--include", "linalg", "--symbols", SEED, "--trace"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pass 1, at []: dot_distributeo: (A @ (x + y)) -> ((A @ x) + (A @ y))"
    assert lines[1] == "((A @ x) + (A @ y))"


def test_explore_takes_the_api_default_timeout(monkeypatch, capsys):
    seen = {}
    explore = rg.explore

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return explore(*args, **{**kwargs, "max_iterations": 1})

    monkeypatch.setattr(relgraph.ui.cli, "explore", spy)
    assert main([*EXPLORE, "--symbols", SEED]) == 0
    assert seen["timeout"] == "default"  # rg.explore's 5 s, not "no limit"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["rewrite", "np.exp(x)", "--symbols", SEED], "np.exp: functions are named without a "
         "module in expressions: write exp(...)"),
        (["rewrite", "x / x", "--include", "div_selfo", "--symbols", "x:scalar"],
         "div_selfo is tagged 'unsafe', which runs only when a query names it: add 'unsafe'"),
        (["jit", f"{LOGISTIC}:log_likelihood", "--args", "X:5x3,w:3,y=abc"],
         "bad --args item 'y=abc': 'abc' is not a number"),
    ],
)  # fmt: skip
def test_cli_errors_say_what_is_wrong_and_how_to_fix_it(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_cost_counts_flops_where_the_shapes_are_given(capsys):
    shaped = "A:matrix:100x100,B:matrix:100x100,v:vector:100"
    assert main(["rewrite", "A @ B @ v", "--symbols", shaped]) == 0
    result, cost = capsys.readouterr().out.splitlines()
    assert result == "(A @ (B @ v))" and cost.startswith("cost 60400 (input 2.0602e+06)")


def test_jit_takes_your_relations(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    rules = tmp_path / "my_rules.py"
    rules.write_text(
        "import relgraph as rg\n"
        "x = rg.lvar('x')\n"
        "square_root = rg.rule(rg.sqrt(x ** 2), abs(x), name='square_root')\n"
    )
    code = tmp_path / "norm.py"
    code.write_text("import numpy as np\ndef f(v):\n    return np.sqrt(v * v) + 1\n")
    argv = ["jit", f"{code}:f", "--args", "v:40", "--include", "canonicalize"]
    assert main([*argv, "--relations", f"{rules}:square_root"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "rewritten: (1 + abs(v))"
    assert main(argv) == 0
    assert "sqrt" in capsys.readouterr().out.splitlines()[1]  # the query alone keeps it


def test_jit_takes_numbers_and_scalars(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    source = tmp_path / "scaled.py"
    source.write_text("import numpy as np\n\ndef f(x, eps, s):\n    return x / (eps + s)\n")
    assert main(["jit", f"{source}:f", "--args", "x:10,eps=1e-5,s:scalar"]) == 0
    assert "(same)" in capsys.readouterr().out

"""The README's two commands are the ones CI and users run."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands():
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return [line for b in blocks for line in b.splitlines() if line and not line.startswith("#")]


def test_readme_opens_with_the_main_job_and_the_tests():
    main_job, tests = readme_commands()[:2]
    assert "relgraph jit" in main_job and "--args" in main_job
    assert "pytest" in tests and '".[test]"' in tests


def test_ci_runs_exactly_the_readme_test_command():
    tests = readme_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in ci

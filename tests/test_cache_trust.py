"""Nothing read from a cache directory runs code or changes a result: entries are
data with this user's MAC, Numba's compiled entries are verified, and a cache
that cannot be used or written never fails a call."""

import json
import os
import pickle
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import relgraph as rg
from relgraph import cache_files
from relgraph.rewriting import cache as rewrite_cache, term_json

JIT_SCRIPT = textwrap.dedent(
    """
    import numpy as np, relgraph as rg
    softplus = rg.jit(lambda z: np.log(1 + np.exp(z)), compile="eager")
    print(softplus(np.array([0.0, 1.0])).tolist())
    """
)
SOFTPLUS = np.log1p(np.exp([0.0, 1.0])).tolist()


def run(cache: Path, script: str, **env) -> subprocess.CompletedProcess:
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(cache), **env)
    return subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )


def values(done: subprocess.CompletedProcess) -> list:
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def rewrite_entries(cache: Path) -> list[Path]:
    return [p for p in (cache / "rewrites").rglob("*") if p.is_file()]


def test_term_data_round_trips_every_kind_of_leaf():
    x = rg.vector("x", "float32")
    A = rg.matrix("A", shape=(2, 3))
    t = rg.add(
        rg.exp(x) * -0.0,
        rg.sum(A, axis=(0, 1)),
        float("inf"),
        np.float32(2.5),
        rg.as_term(np.array([1.0, np.nan])),
    )
    assert term_json.loads(term_json.dumps(t)) == t
    assert term_json.loads(term_json.dumps((t, [x], None))) == (t, [x], None)
    deep = x
    for _ in range(5000):  # no recursion in either direction
        deep = rg.tanh(deep)
    assert term_json.loads(term_json.dumps(deep)) == deep


def test_term_data_never_imports_or_calls_what_it_names():
    planted = json.dumps({"rows": [[["os", "system"], "true"]], "value": {"n": 0}}).encode()
    with pytest.raises(ValueError, match="not an Op"):
        term_json.loads(planted)


def test_a_planted_pickle_in_the_rewrite_cache_runs_nothing(tmp_path):
    assert values(run(tmp_path, JIT_SCRIPT)) == pytest.approx(SOFTPLUS)
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (entry,) = rewrite_entries(tmp_path)
    entry.write_bytes(pickle.dumps(Payload()))
    assert values(run(tmp_path, JIT_SCRIPT)) == pytest.approx(SOFTPLUS)
    assert not marker.exists()


def test_a_forged_rewrite_entry_is_refused(tmp_path):
    """An entry rewritten without the secret (another program, its plain checksum
    recomputed) is not an entry: the next process rewrites again."""
    assert values(run(tmp_path, JIT_SCRIPT)) == pytest.approx(SOFTPLUS)
    (entry,) = rewrite_entries(tmp_path)
    blob = entry.read_bytes()
    form, kept, program, report = blob[32:].split(b"\n", 3)
    forged = term_json.dumps(rg.vector("z") + rg.vector("z"))
    entry.write_bytes(os.urandom(32) + b"\n".join([form, kept, forged, report]))
    assert values(run(tmp_path, JIT_SCRIPT)) == pytest.approx(SOFTPLUS)


def test_the_secret_is_private_and_made_once(tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    path = tmp_path / "entry"
    assert cache_files.write_signed(path, b"data")
    assert cache_files.read_signed(path) == b"data"
    secret = tmp_path / "secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    path.write_bytes(path.read_bytes()[:-1] + b"x")
    assert cache_files.read_signed(path) is None


def test_a_cache_directory_others_can_write_is_not_used(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(shared))
    x = rg.vector("x")
    with pytest.warns(RuntimeWarning, match="others can write it"):
        out = rg.function([x], x * 7.25 + 1.0, compile="eager")(np.ones(2))
    np.testing.assert_array_equal(out, [8.25, 8.25])
    assert not (shared / "kernels").exists() or not any((shared / "kernels").glob("k_*.py"))
    assert cache_files.refusal(shared) is not None
    rewrite_cache.store("ab" * 20, x, None)
    assert rewrite_entries(shared) == []


def numba_entries(cache: Path) -> list[Path]:
    return sorted((cache / "kernels" / "__pycache__").glob("*.nbc"))


KERNEL_SCRIPT = (
    "import numpy as np, relgraph as rg; x = rg.vector('x'); "
    "print(rg.function([x], x * 2.5, compile='eager')(np.ones(3)).tolist())"
)


@pytest.mark.parametrize("damage", ["constant", "bytes"])
def test_numba_cache_entries_are_verified_before_loading(tmp_path, damage):
    assert values(run(tmp_path, KERNEL_SCRIPT)) == [2.5] * 3
    (nbc,) = numba_entries(tmp_path)
    data = bytearray(nbc.read_bytes())
    if damage == "constant":
        at = bytes(data).find(np.float64(2.5).tobytes())
        assert at >= 0
        data[at : at + 8] = np.float64(3.5).tobytes()
    else:
        data[1000:1008] = b"\xff" * 8
    nbc.write_bytes(bytes(data))
    for _ in range(2):  # recompiled once, then loaded from the fresh, signed entry
        assert values(run(tmp_path, KERNEL_SCRIPT)) == [2.5] * 3


def test_a_full_disk_warns_once_and_computes(tmp_path):
    script = textwrap.dedent(
        """
        import resource, signal, warnings
        import numpy as np, relgraph as rg
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
        x = rg.vector("x")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a = rg.function([x], np.exp(x) + 5.0, compile="eager")(np.ones(3))
            b = rg.function([x], np.exp(x) * 3.0, compile="eager")(np.ones(3))
        print(len([w for w in caught if "cannot be written" in str(w.message)]))
        print((a + b).tolist())
        """
    )
    done = run(tmp_path, script)
    assert done.returncode == 0, done.stderr[-2000:]
    warned, total = done.stdout.strip().splitlines()[-2:]
    assert int(warned) == 1
    np.testing.assert_allclose(json.loads(total), np.exp(np.ones(3)) * 4 + 5.0)


def test_the_query_key_follows_the_globals_a_relation_reads(tmp_path):
    script = textwrap.dedent(
        """
        import sys, relgraph as rg
        LIMIT = float(sys.argv[1])
        def big_enough(c):
            return c > LIMIT
        c, x = rg.lvar("c", constant=True), rg.lvar("x")
        rule = rg.rule(rg.sign(c * x), rg.sign(x), when=lambda c: big_enough(c), name="s")
        v = rg.vector("v")
        b = rg.rewrite_many([rg.sign(3.0 * v)], rg.EquilibriumRewriter([rule]), progress=False)
        print(rg.pprint(b[0]))
        """
    )
    path = tmp_path / "prog.py"
    path.write_text(script)
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(tmp_path / "cache"))
    out = [
        subprocess.run(
            [sys.executable, str(path), limit], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()  # fmt: skip
        for limit in ("0", "10", "0")
    ]
    assert out == ["sign(v)", "sign(3.0 * v)", "sign(v)"]


def test_a_deep_program_is_kept_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    x = rg.vector("x")
    deep = x
    for _ in range(3000):
        deep = deep * 1.0 + 0.0
    digest = "cd" * 20
    visits = []  # each node is visited once: storing is linear in the program's size
    walk = term_json.subterms

    def counted(term):
        for node in walk(term):
            visits.append(node)
            yield node

    monkeypatch.setattr(term_json, "subterms", counted)
    rewrite_cache.store(digest, deep, None)
    assert len(visits) == 6000
    found = rewrite_cache.load(digest)
    assert found is not None and found[0] == deep

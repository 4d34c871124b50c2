"""rg.rewrite_many and rg.compile_many on a 2-worker LocalCluster, and the rewrite cache."""

import gc
import hashlib
import io
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from unification import reify

import relgraph as rg
from relations import optdb
from relgraph.rewriting import cache as rewrite_cache, term_json

pytest.importorskip("distributed")

x, y = rg.vector("x"), rg.vector("y")


def programs(n: int, salt: float = 0.0) -> list:
    """Distinct programs that fast_run simplifies (log(exp(y)) * 1.0 -> y)."""
    return [rg.exp(x) * (float(i) + salt) + rg.log(rg.exp(y)) * 1.0 for i in range(n)]


def fast_run():
    return optdb.query(include=["fast_run"])


def test_results_come_in_input_order_and_match_rewrite(dask_client):
    terms = programs(60, salt=0.25)
    batch = rg.rewrite_many(terms, fast_run(), client=dask_client, progress=False)
    assert batch.ok and len(batch) == 60 and not any(batch.cached)
    for term, got in zip(terms, batch):
        assert got == rg.rewrite(term, fast_run())
    assert all(r is not None and r.nodes_after < r.nodes_before for r in batch.reports)


def test_a_second_run_rewrites_nothing(dask_client, monkeypatch):
    terms = programs(40, salt=0.5)
    first = rg.rewrite_many(terms, fast_run(), client=dask_client, progress=False)
    assert not any(first.cached)

    # The workers wrote the cache: this process finds every entry and sends no task
    # (counted where they are sent: the workers' own counts may still move with tasks
    # of earlier tests that a busy machine has not finished).
    sent = []
    submit = dask_client.submit
    monkeypatch.setattr(dask_client, "submit", lambda *a, **k: sent.append(a) or submit(*a, **k))
    again = rg.rewrite_many(programs(40, salt=0.5), fast_run(), client=dask_client)
    assert all(again.cached) and list(again) == list(first)
    assert sent == []


def test_workers_fingerprint_the_query_as_this_process_does(dask_client):
    # The rewriter reaches the workers pickled (its closures by value): the key of a
    # program must not change on the way, or the workers' entries are never found here.
    query = fast_run()
    shared = dask_client.scatter(query, broadcast=True)
    theirs = dask_client.submit(rewrite_cache.fingerprint, shared).result()
    assert theirs == rewrite_cache.fingerprint(query) is not None


def test_every_function_of_a_pickled_query_names_its_module():
    # cloudpickle searches every loaded module for a function without __module__:
    # with the library's generated rule filters that made each task cost 0.4 s.
    cloudpickle = pytest.importorskip("cloudpickle")
    unnamed = []

    class Spy(cloudpickle.Pickler):
        def reducer_override(self, obj):
            if callable(obj) and getattr(obj, "__module__", "") is None:
                unnamed.append(obj)
            return super().reducer_override(obj)

    Spy(io.BytesIO()).dump(fast_run())
    assert unnamed == []


def test_errors_are_collected_per_program(dask_client):
    terms = programs(10, salt=0.75)
    terms[3] = "x +"  # not a term
    terms[7] = rg.lvar("q") + x  # not ground
    batch = rg.rewrite_many(terms, fast_run(), client=dask_client, progress=False)
    assert sorted(batch.errors) == [3, 7] and not batch.ok
    assert "program 3" in str(batch.errors[3]) and "TypeCheckError" in str(batch.errors[3])
    with pytest.raises(rg.ProgramError, match="program 7"):
        batch[7]
    assert batch.results[3] is None and batch[2] == rg.rewrite(terms[2], fast_run())
    assert "8 done, 2 failed" in repr(batch)


def test_a_relation_that_raises_fails_only_its_programs(dask_client):
    def boomo(a, b):
        def goal(s):
            term = reify(a, s)
            if isinstance(term, rg.Term) and term.op is rg.neg:
                raise RuntimeError("boom")
            return iter(())

        return goal

    rewriter = rg.EquilibriumRewriter([boomo])
    batch = rg.rewrite_many([x + y, -x, y * 2.0], rewriter, client=dask_client, progress=False)
    assert list(batch.errors) == [1] and "boomo" in str(batch.errors[1])
    assert batch[0] == x + y


def test_progress_bar(dask_client, capsys):
    rg.rewrite_many(programs(12, salt=1.5), fast_run(), client=dask_client, progress=True)
    err = capsys.readouterr().err
    assert "rewrite" in err and "12/12" in err


def test_without_a_client_it_runs_here_with_the_same_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    terms = programs(8, salt=2.0)
    first = rg.rewrite_many(terms, fast_run(), client=None, progress=False)
    assert first.ok and not any(first.cached)
    assert all(rg.rewrite_many(terms, fast_run(), progress=False).cached)
    assert not any(rg.rewrite_many(terms, fast_run(), cache=False, progress=False).cached)


def test_bad_query_or_client_is_refused():
    with pytest.raises(TypeError, match="query must be a rewriter"):
        rg.rewrite_many([x], ["fast_run"])
    with pytest.raises(TypeError, match="client must be"):
        rg.rewrite_many([x + y], fast_run(), client=42)
    with pytest.raises(ValueError, match="batch_size must be"):
        rg.rewrite_many([x + y], fast_run(), batch_size=0)


def test_a_rewriter_the_cache_cannot_fingerprint_is_said_so(tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))

    class Doubler:  # anything with apply() is a rewriter
        def apply(self, term):
            return term * 2.0, None

    with pytest.warns(RuntimeWarning, match="cannot fingerprint"):
        batch = rg.rewrite_many([x], Doubler(), progress=False)
    assert batch[0] == x * 2.0 and not list(tmp_path.rglob("*"))


def test_compile_many_returns_working_functions(dask_client, rng):
    progs = [([x, y], rg.exp(x) * float(i) + y * 1.0) for i in range(6)]
    progs.append(([x], x + y))  # y is not an input
    batch = rg.compile_many(progs, fast_run(), client=dask_client, progress=False)
    assert list(batch.errors) == [6] and "not inputs: y" in str(batch.errors[6])
    a, b = rng.random(5), rng.random(5)
    for i in range(6):
        np.testing.assert_allclose(batch[i](a, b), np.exp(a) * i + b, rtol=1e-14)


# --- the cache itself --------------------------------------------------------------


def key(term, rewriter):
    return rewrite_cache.key(term, rewrite_cache.fingerprint(rewriter))


def test_corrupt_and_stale_entries_are_ignored_and_written_again(tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    q, term = fast_run(), rg.log(rg.exp(rg.exp(x))) * 1.0
    digest = key(term, q)
    path = Path(rewrite_cache._path(digest))
    rg.rewrite_many([term], q, progress=False)
    assert rewrite_cache.load(digest)[0] == rg.exp(x)
    good = path.read_bytes()
    mac, data = good[:32], good[32:]
    form, kept, program, report = data.split(b"\n", 3)
    other = term_json.dumps(y)
    damaged = [
        b"garbage",  # not an entry
        good[: len(good) // 2],  # cut short
        mac + b"\n".join([form, kept, other, report]),  # a program other than the one signed
        hashlib.sha256(other).digest() + b"\n".join([form, kept, other, report]),  # unkeyed
        pickle.dumps((form, kept, hashlib.sha256(other).digest(), other)),  # the old format
    ]
    for blob in damaged:
        path.write_bytes(blob)
        assert rewrite_cache.load(digest) is None
        batch = rg.rewrite_many([term], q, progress=False)
        assert batch[0] == rg.exp(x) and not batch.cached[0]
        assert rewrite_cache.load(digest)[0] == rg.exp(x)  # written again


def test_the_key_follows_the_query_content():
    term = rg.log(rg.exp(x)) * 1.0
    assert key(term, fast_run()) == key(rg.log(rg.exp(rg.vector("x"))) * 1.0, fast_run())
    keys = {
        key(term, fast_run()),
        key(term, optdb.query(include=["canonicalize"])),
        key(term, optdb.query(include=["fast_run"], exclude=["stabilize"])),
    }
    assert len(keys) == 3

    def twiceo(a, b):
        return rg.rule(rg.lvar("v") * 2.0, rg.lvar("v") + rg.lvar("v"))(a, b)

    first = key(term, rg.EquilibriumRewriter([twiceo]))

    def twiceo(a, b):  # noqa: F811 - the same name, other code
        return rg.rule(rg.lvar("v") * 3.0, rg.lvar("v") + rg.lvar("v"))(a, b)

    assert key(term, rg.EquilibriumRewriter([twiceo])) != first
    assert key(term, rg.EquilibriumRewriter([twiceo], max_passes=3)) != first


def test_the_key_is_the_same_in_another_process():
    code = textwrap.dedent(
        """
        import relgraph as rg
        from relgraph.rewriting import cache as rewrite_cache
        from relgraph.rewriting import term_json
        from relations import optdb
        x, y = rg.vector("x"), rg.vector("y")
        q = rewrite_cache.fingerprint(optdb.query(include=["fast_run"]))
        print(rewrite_cache.key(rg.exp(x) * 2.0 + rg.log(rg.exp(y)) * 1.0, q))
        """
    )
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    keys = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(keys) == 1
    assert keys == {key(rg.exp(x) * 2.0 + rg.log(rg.exp(y)) * 1.0, fast_run())}


def test_processes_writing_one_entry_at_once_leave_a_sound_entry(tmp_path):
    code = textwrap.dedent(
        """
        import relgraph as rg
        from relgraph.rewriting import cache as rewrite_cache
        from relgraph.rewriting import term_json
        from relations import optdb
        x = rg.vector("x")
        q, term = optdb.query(include=["fast_run"]), rg.log(rg.exp(x)) * 1.0
        digest = rewrite_cache.key(term, rewrite_cache.fingerprint(q))
        for _ in range(200):
            rewrite_cache.store(digest, x, None)
            found = rewrite_cache.load(digest)
            assert found is None or found[0] == x, found
        print("ok")
        """
    )
    env = {**os.environ, "RELGRAPH_CACHE_DIR": str(tmp_path)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    assert [p.communicate(timeout=120)[0].strip() for p in procs] == ["ok"] * 3
    assert not list(tmp_path.rglob(".tmp-*"))  # no temporary file left behind


def test_thirty_batches_on_one_client_lose_nothing(dask_client):
    terms = programs(6, salt=0.75)
    expected = [rg.rewrite(t, fast_run()) for t in terms]
    for _ in range(30):
        batch = rg.rewrite_many(terms, fast_run(), client=dask_client, cache=False,
                                progress=False, batch_size=2)  # fmt: skip
        assert batch.ok and list(batch) == expected


KILLER = textwrap.dedent(
    """
    import logging, os
    logging.disable(logging.CRITICAL)

    def dieo(a, b):
        def goal(S):
            from unification import reify
            if "x3" in repr(reify(a, S)):
                os._exit(3)  # as a segfault or the OOM killer would
            return iter(())
        return goal

    if __name__ == "__main__":
        import dask, gc
        import relgraph as rg
        from distributed import Client, Future, LocalCluster
        # a task fails at its second worker death (not its fourth): fewer restarts; and
        # a worker that takes long to start again on a busy machine is waited for
        # (after 15 s the cluster would close its nanny, and with both closed have
        # no workers left)
        dask.config.set({"distributed.scheduler.allowed-failures": 1,
                         "distributed.deploy.lost-worker-timeout": "600s"})
        rg.frontend.fleet.NO_WORKERS_TIMEOUT = 600.0  # however long a restart takes
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
            with Client(cluster) as client:
                programs = [rg.exp(rg.vector(f"x{i}")) for i in range(8)]
                for size in (1, 4):
                    batch = rg.rewrite_many(programs, rg.EquilibriumRewriter([dieo]),
                                            client=client, cache=False, progress=False,
                                            batch_size=size)
                    # and no future of the batch is alive (without a garbage collection)
                    live = sum(type(o) is Future for o in gc.get_objects())
                    print(sorted(batch.errors), sum(r is not None for r in batch.results), live)
    """
)


def test_a_program_that_kills_its_worker_is_one_error(tmp_path):
    """The program that kills its worker is the one error, in batches of 1 and of 4,
    and no future of a batch is alive once it has returned (the error of a task,
    raised through the batch's frame, kept every future of the batch alive, and the
    cluster computed their tasks again after each worker death)."""
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    env = dict(os.environ, RELGRAPH_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == ["[3] 7 0", "[3] 7 0"]


def test_a_cluster_without_workers_fails_each_program_saying_so(monkeypatch):
    """Workers that died and were not started again (here: none at all) end the batch
    after ``NO_WORKERS_TIMEOUT`` seconds with an error per program, not a hang."""
    from distributed import Client, Future, LocalCluster

    from relgraph.frontend import fleet

    monkeypatch.setattr(fleet, "NO_WORKERS_TIMEOUT", 0.5)
    with (
        LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        batch = rg.rewrite_many(programs(3), fast_run(), client=client, cache=False,
                                progress=False, batch_size=2)  # fmt: skip
        # (type(), not isinstance(): a dead weak proxy among the objects raises)
        assert not [o for o in gc.get_objects() if type(o) is Future and o.client is client]
    assert sorted(batch.errors) == [0, 1, 2] and batch.results == [None] * 3
    assert "the cluster has had no workers for 0.5 s" in str(batch.errors[2])

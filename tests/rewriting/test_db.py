import pytest
from etuples import etuple
from kanren import eq, lall, var

import relgraph as rg
from relgraph.rewriting.db import EquilibriumDB, Query, SequenceDB


def make_rel(name):
    def rel(a, b):
        x = var()
        return lall(eq(a, etuple(rg.exp, x)), eq(b, x))

    rel.__name__ = name
    return rel


@pytest.fixture
def db():
    db = EquilibriumDB("eq")
    db.register("r_fast", make_rel("r_fast"), "fast_run", "stable")
    db.register("r_unsafe", make_rel("r_unsafe"), "fast_run", "unsafe")
    db.register("r_other", make_rel("r_other"), "other")
    return db


def names(rewriter):
    return [r.name for r in rewriter.rules]


class TestQuerySemantics:
    def test_include_is_any_of(self, db):
        assert names(db.query(include=["fast_run"])) == ["r_fast", "r_unsafe"]
        assert names(db.query(include=["stable", "other"])) == ["r_fast", "r_other"]

    def test_require_is_all_of(self, db):
        assert names(db.query(include=["fast_run"], require=["unsafe"])) == ["r_unsafe"]

    def test_exclude_is_none_of(self, db):
        assert names(db.query(include=["fast_run"], exclude=["unsafe"])) == ["r_fast"]

    def test_a_name_counts_as_a_tag(self, db):
        assert names(db.query(include=["r_other"])) == ["r_other"]
        assert names(db.query(include=["fast_run"], exclude=["r_fast"])) == ["r_unsafe"]

    def test_query_object_and_refinements(self, db):
        q = Query(include=["other"]).including("stable").excluding("r_other")
        assert names(db.query(q)) == ["r_fast"]
        assert names(db.query(Query(["fast_run"]).requiring("stable"))) == ["r_fast"]

    def test_unknown_tags_are_an_error(self, db):
        with pytest.raises(rg.QueryError, match="fast_rnu"):
            db.query(include=["fast_rnu"])
        with pytest.raises(rg.QueryError, match="nope"):
            db.query(include=["fast_run"], require=["nope"])

    def test_tags_must_be_given_as_a_list(self, db):
        with pytest.raises(TypeError, match="list of tags"):
            db.query(include="fast_run")

    def test_the_rewriter_applies_the_selected_relations(self, db):
        x = rg.vector("x")
        out, rep = rg.rewrite(rg.exp(rg.exp(x)), db.query(include=["stable"]), report=True)
        assert out == x and rep.applications == {"r_fast": 2}


class TestRegistration:
    def test_register_returns_the_entry_unchanged(self):
        db = EquilibriumDB()
        rel = make_rel("r")
        assert db.register("r", rel, "t") is rel
        assert "r" in db and db["r"].relation is rel

    def test_a_taken_name_is_an_error_unless_overwrite(self, db):
        with pytest.raises(rg.RegistrationError, match="r_fast.*taken"):
            db.register("r_fast", make_rel("x"), "fast_run")
        db.register("r_fast", make_rel("x"), "new_tag", overwrite=True)
        assert names(db.query(include=["new_tag"])) == ["r_fast"]

    def test_wrong_entries_are_rejected(self):
        db = EquilibriumDB("eq")
        with pytest.raises(rg.RegistrationError, match="goal constructor"):
            db.register("n", 42, "t")
        with pytest.raises(rg.RegistrationError, match="EquilibriumDB"):
            db.register("s", SequenceDB(), "t")
        with pytest.raises(rg.RegistrationError, match="tags must be strings"):
            db.register("r", make_rel("r"), 3)

    def test_tracks_are_kept(self):
        db = EquilibriumDB()
        db.register("r", make_rel("r"), "t", tracks=[rg.exp])
        assert db.query(include=["t"]).rules[0].tracks == frozenset([rg.exp])

    def test_options_are_validated_and_passed(self):
        with pytest.raises(ValueError):
            EquilibriumDB("bad", on_error="sometimes")
        db = EquilibriumDB("eq", max_use_ratio=3)
        db.register("r", make_rel("r"), "t")
        assert db.query(include=["t"]).max_use_ratio == 3


class TestNesting:
    def test_sequence_runs_by_position_and_queries_nested_dbs(self, db):
        seq = SequenceDB("seq")
        later = EquilibriumDB("later")
        later.register("r_late", make_rel("r_late"), "fast_run")
        seq.register("later", later, "fast_run", position=2)
        seq.register("first", db, "fast_run", position=1)
        rewriter = seq.query(include=["fast_run"], exclude=["unsafe"])
        assert [name for name, _ in rewriter.steps] == ["first", "later"]
        assert names(rewriter.steps[0][1]) == ["r_fast"]

    def test_subquery_replaces_the_query_for_one_db(self, db):
        seq = SequenceDB("seq")
        seq.register("inner", db, "fast_run")
        rewriter = seq.query(Query(["fast_run"], subquery={"inner": Query(["other"])}))
        assert names(rewriter.steps[0][1]) == ["r_other"]

    def test_nested_equilibrium_dbs_merge(self, db):
        outer = EquilibriumDB("outer")
        outer.register("inner", db, "fast_run")
        outer.register("own", make_rel("own"), "fast_run")
        assert names(outer.query(include=["fast_run"])) == ["r_fast", "r_unsafe", "own"]

    def test_a_relation_in_a_sequence_runs_as_its_own_equilibrium(self):
        seq = SequenceDB()
        seq.register("r", make_rel("r"), "t")
        x = rg.vector("x")
        assert rg.rewrite(rg.exp(rg.exp(x)), seq.query(include=["t"])) == x


class TestNestedSemantics:
    """PyTensor's optdb: a database's name selects its contents; exclusion is per entry."""

    def test_a_nested_database_is_selected_by_its_name(self, db):
        seq = SequenceDB("seq")
        seq.register("inner", db)  # no tags copied onto it
        assert names(seq.query(include=["inner"]).steps[0][1]) == ["r_fast", "r_unsafe", "r_other"]
        outer = EquilibriumDB("outer")
        outer.register("inner", db)
        assert names(outer.query(include=["inner"], exclude=["r_unsafe"])) == ["r_fast", "r_other"]

    def test_opting_out_of_the_database_name(self, db):
        seq = SequenceDB("seq")
        inner = EquilibriumDB("inner")
        inner.register("kept", make_rel("kept"), "t")
        inner.register("own_tags_only", make_rel("own_tags_only"), "x", use_db_name_as_tag=False)
        seq.register("inner", inner)
        assert names(seq.query(include=["inner"]).steps[0][1]) == ["kept"]
        assert names(seq.query(include=["x"]).steps[0][1]) == ["own_tags_only"]

    def test_a_query_that_selects_nothing_is_an_error(self, db):
        with pytest.raises(rg.QueryError, match="selects no relation"):
            db.query(include=["fast_run"], exclude=["fast_run"])
        from local_relations import localdb

        with pytest.raises(rg.QueryError, match="selects no relation"):
            localdb.query(include=["canonicalize"], exclude=["canonicalize"])

    def test_an_unknown_tag_in_exclude_is_an_error(self, db):
        with pytest.raises(rg.QueryError, match="no entry has the tag.*'unsfe'"):
            db.query(include=["fast_run"], exclude=["unsfe"])

"""``themisto --store URL``: both engines for every command, per-user listing and export,
and ``themisto migrate`` (resumable, idempotent, progress on stderr)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from test_api import predicted
from test_cli import themisto
from test_store import interpret_lines, start, step

from themisto_ext.store import StoreError, open_store, parse_store_url


def seed(url: str, owners: dict[str, str], steps: int = 3) -> None:
    store = open_store(url)
    for n, (tid, owner) in enumerate(owners.items()):
        records = [start(tid, f"k{n}", f"2026-01-0{n + 1}T00:00:00+00:00")]
        records += [step(tid, i) for i in range(1, steps + 1)]
        store.apply(interpret_lines(records, "kernel", user=owner), None)
    store.close()


@pytest.mark.parametrize("text,engine,target,display", [
    ("/data/t.sqlite3", "sqlite", "/data/t.sqlite3", "sqlite:////data/t.sqlite3"),
    ("rel/t.sqlite3", "sqlite", "rel/t.sqlite3", "sqlite:///rel/t.sqlite3"),
    ("sqlite:////data/t.sqlite3", "sqlite", "/data/t.sqlite3", "sqlite:////data/t.sqlite3"),
    ("sqlite:///rel.sqlite3", "sqlite", "rel.sqlite3", "sqlite:///rel.sqlite3"),
    ("postgresql://me:s3cret@db.local:5433/themisto", "postgresql",
     "postgresql://me:s3cret@db.local:5433/themisto", "postgresql://me@db.local:5433/themisto"),
    ("postgres://me@[::1]/t?sslmode=disable", "postgresql",
     "postgres://me@[::1]/t?sslmode=disable", "postgres://me@[::1]/t"),
])
def test_store_urls_parse_and_never_show_a_password(text, engine, target, display):
    url = parse_store_url(text)
    assert (url.engine, url.target, url.display, str(url)) == (engine, target, display, display)


@pytest.mark.parametrize("text,problem", [
    ("mysql://x/y", "unknown store URL scheme"),
    ("postgresql://me:pw@host:5432", "names no database"),
    ("postgresql://me:pw@host:port/db", "port is not a number"),
    ("sqlite://relative", "bad SQLite URL"),
    ("", "empty store location"),
])
def test_bad_store_urls_are_clear_errors(text, problem):
    with pytest.raises(StoreError, match=problem) as raised:
        parse_store_url(text)
    assert "pw" not in str(raised.value)


def test_list_and_export_filter_by_user(store_url: str, tmp_path: Path):
    seed(store_url, {"a1": "alice", "b1": "bob", "b2": "bob"})
    listed = themisto("--store", store_url, "list", "--user", "bob", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["id"], r["user"]) for r in rows] == [("b1", "bob"), ("b2", "bob")]
    table = themisto("--store", store_url, "list").stdout
    assert "USER" in table.splitlines()[0] and "alice" in table
    out = tmp_path / "bob.jsonl"
    exported = themisto("--store", store_url, "export", "--all", "--user", "bob",
                        "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert {(json.loads(line)["trajectory_id"], json.loads(line)["user"])
            for line in out.read_text().splitlines()} == {("b1", "bob"), ("b2", "bob")}
    refused = themisto("--store", store_url, "export", "a1", "--user", "bob", "--out", "-")
    assert refused.returncode == 1 and "--user goes with --all" in refused.stderr


@pytest.mark.parametrize("target_engine", ["postgresql", "sqlite"])
def test_migrate_copies_resumes_and_is_idempotent(tmp_path: Path, pg_cluster, target_engine):
    source = f"sqlite:///{tmp_path / 'mine.sqlite3'}"
    seed(source, {"old": "", "new": "alice"}, steps=2500)
    store = open_store(source)
    store.save_prediction(predicted("old", 3))
    store.apply(interpret_lines([start("old2", "k0", "2026-02-01T00:00:00+00:00")], "kernel",
                                user=""), None)  # a restart of old's kernel: linked, with an event
    store.close()
    target = (pg_cluster.create_database() if target_engine == "postgresql"
              else f"sqlite:///{tmp_path / 'shared.sqlite3'}")
    partial = open_store(target)  # an interrupted earlier run: one trajectory, half its steps
    first = open_store(source)
    partial.import_trajectory(first.get_trajectory("new"), [])
    partial.import_step_lines("new", list(first.iter_step_lines("new", limit=1200)))
    partial.close()

    done = themisto("migrate", "--from", source, "--to", target, "--user", "carol")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("5,000/5,000 steps") == 1  # the progress bar
    assert "copied 2 trajectories (1 already there), 3800 new steps and 1 predictions" \
        in done.stdout
    copied = open_store(target)
    assert copied.get_trajectory("new") == first.get_trajectory("new")
    for tid in ("old", "old2"):  # recorded before owners: given to --user
        assert copied.get_trajectory(tid) == replace(first.get_trajectory(tid), user="carol")
    for tid in ("old", "new", "old2"):
        assert list(copied.iter_step_lines(tid)) == list(first.iter_step_lines(tid))
    assert copied.get_trajectory("old2").restart_of == "old"
    assert copied.events("old2") == first.events("old2")
    assert copied.get_prediction("p-old-3") == first.get_prediction("p-old-3")
    copied.close()

    again = themisto("migrate", "--from", source, "--to", target)
    assert again.returncode == 0, again.stderr
    assert "copied 0 trajectories (3 already there), 0 new steps" in again.stdout


def test_migrate_refuses_a_missing_source_and_the_same_store(tmp_path: Path):
    missing = themisto("migrate", "--from", str(tmp_path / "none.sqlite3"), "--to",
                       f"sqlite:///{tmp_path / 'b.sqlite3'}")
    assert missing.returncode == 1 and "no such store" in missing.stderr
    assert not (tmp_path / "none.sqlite3").exists()
    same = themisto("migrate", "--from", f"sqlite:///{tmp_path}/a", "--to",
                    f"sqlite:///{tmp_path}/a")
    assert same.returncode == 1 and "same store" in same.stderr

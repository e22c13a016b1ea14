"""A database role per hub user (store/roles.py) on a real PostgreSQL: with what a user's
server holds (its own role and password), SQL of any kind reaches that user's rows only;
a reader's role reads all and changes nothing of anyone else's; the owner sees all."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import psycopg
import pytest
from test_store import apply, start, step

from themisto_ext.store import StoreError, StoreURL, open_store, parse_store_url
from themisto_ext.store.postgres import PostgresStore
from themisto_ext.store.roles import StoreRoles, role_name

OWNER_PASSWORD = "owner-pw-not-the-superusers"


@pytest.fixture
def owner(pg_cluster) -> StoreURL:
    return parse_store_url(pg_cluster.create_owned_database(OWNER_PASSWORD)).with_password(
        OWNER_PASSWORD)


@pytest.fixture
def classroom(owner) -> Iterator[dict]:
    """Alice and Bob recorded a trajectory each through their own roles; the teacher's
    role reads all. Values: (url with password, open store)."""
    roles = StoreRoles(owner)
    opened = {}
    for user, read_all in (("alice", False), ("bob", False), ("teacher", True)):
        url, password = roles.ensure(user, read_all=read_all)
        opened[user] = (url.with_password(password), open_store(url.with_password(password)))
    for user in ("alice", "bob"):
        apply(opened[user][1], [start(f"t-{user}", kernel=f"k-{user}"), step(f"t-{user}", 1),
                                step(f"t-{user}", 2)], f"/home/{user}/j.jsonl",
              (f"/home/{user}/j.jsonl", 100), user=user)
    yield {"roles": roles, "owner": owner, **opened}
    for _, store in opened.values():
        store.close()


def sql(url: StoreURL, statement: str, params: tuple = ()) -> list[tuple]:
    """Run one statement as ``url``'s role, as a student would with psql."""
    with psycopg.connect(url.target, password=url.password, autocommit=True) as conn:
        cur = conn.execute(statement, params)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else [(cur.rowcount,)]


def test_role_names_are_safe_distinct_and_name_nobody():
    names = ("alice", "Alice", "alice ", "a'; DROP ROLE x; --", "x" * 80)
    roles = {role_name(n, "k" * 64) for n in names}
    assert len(roles) == 5 and all(len(r) <= 63 for r in roles)
    assert all(c.isalnum() or c == "_" for r in roles for c in r)
    assert not any("alice" in r for r in roles)  # pg_roles is readable by every role
    assert role_name("alice", "k" * 64) != role_name("alice", "j" * 64)


def unkeyed(user: str) -> str:
    """A role's name before the key: anyone could compute it for any name."""
    return f"themisto_u_{hashlib.sha256(user.encode()).hexdigest()[:20]}"


def test_enrolment_cannot_be_tested_from_a_students_role(classroom):
    # Finding 7 of #40: bob's role name was sha256('bob'), so alice could confirm bob
    # (or anyone) in pg_roles. Now it is keyed, and the key is the owner's alone.
    alice_url, _ = classroom["alice"]
    listed = {name for (name,) in sql(alice_url, "SELECT rolname FROM pg_roles")}
    bob_role = classroom["roles"].role_of("bob")
    assert bob_role in listed and unkeyed("bob") not in listed
    assert not any(unkeyed(u) in listed for u in ("alice", "bob", "teacher"))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        sql(alice_url, "SELECT key FROM themisto_role_key")


def test_a_role_made_before_the_key_is_renamed_and_keeps_its_rows(owner):
    roles = StoreRoles(owner)
    url, password = roles.ensure("carol")
    keyed = roles.role_of("carol")
    store = open_store(url.with_password(password))
    apply(store, [start("t-carol", kernel="k-carol"), step("t-carol", 1)],
          "/home/carol/j.jsonl", None, user="carol")
    store.close()
    with psycopg.connect(owner.target, password=owner.password, autocommit=True) as conn:
        # as an earlier version left it: the role under its unkeyed name
        conn.execute(f'ALTER ROLE "{keyed}" RENAME TO "{unkeyed("carol")}"')
        conn.execute("UPDATE themisto_roles SET role_name = %s WHERE user_name = 'carol'",
                     (unkeyed("carol"),))
    url, password = roles.ensure("carol")
    assert roles.role_of("carol") == keyed and url.target.startswith(f"postgresql://{keyed}@")
    store = open_store(url.with_password(password))
    try:
        assert [s["step"] for s in store.iter_steps("t-carol")] == [1]
    finally:
        store.close()
    roles.revoke("carol")
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url.target, password=password).close()


def test_a_role_learns_no_other_users_name(classroom):
    alice_url, _ = classroom["alice"]
    listed = sql(alice_url, "SELECT rolname FROM pg_roles")
    assert not any("bob" in name or "teacher" in name for (name,) in listed)
    assert sql(alice_url, "SELECT user_name FROM themisto_roles") == [("alice",)]


def test_each_role_reads_and_writes_only_its_users_rows(classroom):
    alice_url, alice = classroom["alice"]
    assert [t.id for t in alice.list_trajectories()] == ["t-alice"]
    assert alice.get_trajectory("t-bob") is None
    assert list(alice.iter_steps("t-bob")) == []
    assert alice.journal_cursors("/home/") == {"/home/alice/j.jsonl": 100}
    assert not alice.delete_trajectory("t-bob")
    # Direct SQL with alice's credentials: every table holds her rows only.
    for table, mine in (("trajectories", 1), ("steps", 2), ("journal_cursors", 1),
                        ("themisto_roles", 1)):
        assert sql(alice_url, f"SELECT count(*) FROM {table}") == [(mine,)], table
    assert sql(alice_url, "UPDATE trajectories SET notebook_path = 'x' WHERE id = 't-bob'") \
        == [(0,)]
    assert sql(alice_url, "DELETE FROM steps WHERE trajectory_id = 't-bob'") == [(0,)]
    assert sql(alice_url, "UPDATE trajectories SET user_name = 'alice' WHERE user_name = "
                          "'bob'") == [(0,)]
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # row-level security
        sql(alice_url, "INSERT INTO trajectories (id, kernel_id, started_at, user_name) "
                       "VALUES ('forged', 'k', 'now', 'bob')")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        sql(alice_url, "INSERT INTO steps (trajectory_id, step, data) VALUES ('t-bob', 9, "
                       "'{}')")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # not the tables' owner
        sql(alice_url, "ALTER TABLE trajectories DISABLE ROW LEVEL SECURITY")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        sql(alice_url, "UPDATE themisto_roles SET read_all = true")
    # Bob's data is whole after all that.
    bob = classroom["bob"][1]
    assert [s["step"] for s in bob.iter_steps("t-bob")] == [1, 2]


def test_a_role_cannot_pose_as_another_user(classroom):
    alice_url, _ = classroom["alice"]
    with psycopg.connect(alice_url.target, password=alice_url.password,
                         autocommit=True) as conn:
        # A temporary table is searched before the schema: the policies' functions must
        # not read it, or anyone could declare themselves bob, or a reader.
        conn.execute("CREATE TEMP TABLE themisto_roles (role_name text, user_name text, "
                     "read_all boolean)")
        conn.execute("INSERT INTO themisto_roles VALUES (current_user, 'bob', true)")
        assert conn.execute("SELECT id FROM trajectories").fetchall() == [("t-alice",)]
        conn.execute("CREATE TEMP VIEW trajectories AS SELECT 1")  # shadows the table ...
        conn.execute("DROP VIEW trajectories")
        # ... and the group role every user's role belongs to sees nothing at all.
        conn.execute("SET ROLE themisto_users")
        assert conn.execute("SELECT count(*) FROM trajectories").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM steps").fetchone() == (0,)
        conn.execute("RESET ROLE")
        # Bob's role is not alice's to take.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"SET ROLE {classroom['roles'].role_of('bob')}")


def test_the_readers_role_reads_all_and_changes_only_its_own(classroom):
    teacher_url, teacher = classroom["teacher"]
    assert {t.id: t.user for t in teacher.list_trajectories()} == {"t-alice": "alice",
                                                                   "t-bob": "bob"}
    assert [s["step"] for s in teacher.iter_steps("t-bob")] == [1, 2]
    assert not teacher.delete_trajectory("t-bob")
    assert sql(teacher_url, "UPDATE steps SET data = '{}'") == [(0,)]
    assert sql(teacher_url, "SELECT count(*) FROM journal_cursors") == [(0,)]
    # A spawn after the scope was taken away: the same role reads only its own again.
    url, password = classroom["roles"].ensure("teacher", read_all=False)
    assert sql(url.with_password(password), "SELECT count(*) FROM trajectories") == [(0,)]


def test_each_spawn_gets_a_new_password_and_the_old_one_stops_working(classroom):
    old, _ = classroom["alice"]
    new, password = classroom["roles"].ensure("alice")
    assert password != old.password and new.target == old.target
    assert sql(new.with_password(password), "SELECT count(*) FROM steps") == [(2,)]
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        sql(old, "SELECT 1")
    classroom["roles"].revoke("alice")
    with pytest.raises(psycopg.OperationalError):
        sql(new.with_password(password), "SELECT 1")


def test_the_owner_sees_every_row_and_a_users_role_cannot_upgrade_the_schema(classroom):
    owner = open_store(classroom["owner"])
    try:
        assert {t.id for t in owner.list_trajectories()} == {"t-alice", "t-bob"}
    finally:
        owner.close()
    alice_url, _ = classroom["alice"]
    sql(classroom["owner"], "UPDATE themisto_schema SET version = version - 1")
    with pytest.raises(StoreError, match="may not change the schema"):
        PostgresStore(alice_url)
    sql(classroom["owner"], "UPDATE themisto_schema SET version = version + 1")


def test_a_journal_cursor_is_its_users_even_where_the_owner_has_one(classroom):
    """A server moved from the owner's role to its own finds the owner's cursors invisible:
    writing its own for the same journal must not collide with them."""
    owner = open_store(classroom["owner"])
    alice = classroom["alice"][1]
    try:
        apply(owner, [start("t-old", kernel="k-old")], "/shared/j.jsonl", ("/shared/j.jsonl", 7))
        apply(alice, [start("t-new", kernel="k-new")], "/shared/j.jsonl", ("/shared/j.jsonl", 3),
              user="alice")
        assert alice.journal_cursors("/shared/") == {"/shared/j.jsonl": 3}
        assert owner.journal_cursors("/shared/") == {"/shared/j.jsonl": 7}
    finally:
        owner.close()


@pytest.mark.parametrize("hold", [
    "SELECT pg_advisory_lock({lock})",
    "LOCK TABLE trajectories, steps IN ACCESS EXCLUSIVE MODE",
    "LOCK TABLE themisto_roles IN ACCESS SHARE MODE",
    "SELECT * FROM themisto_schema, themisto_roles",
])
def test_a_spawn_never_waits_on_a_lock_a_student_holds(classroom, hold):
    """A student's role takes any lock it may (the role-change advisory lock, her tables in
    ACCESS EXCLUSIVE mode, the role table) in an open transaction and keeps it: another
    user's spawn (``ensure``, after opening the store) still completes."""
    import threading

    lock = 0x7468656D69737472  # the advisory lock role changes took before

    alice_url, _ = classroom["alice"]
    held = psycopg.connect(alice_url.target, password=alice_url.password)
    try:
        held.execute(hold.format(lock=lock))  # stays held: the transaction is left open
        done: list[object] = []

        def spawn() -> None:
            try:
                done.append(StoreRoles(classroom["owner"]).ensure("carol"))
            except Exception as exc:  # reported below
                done.append(exc)

        worker = threading.Thread(target=spawn, daemon=True)
        worker.start()
        worker.join(timeout=120)  # a lost race hangs forever: this only reports it
        assert done and isinstance(done[0], tuple), (hold, done)
    finally:
        held.close()


def test_a_students_table_lock_delays_others_by_a_bounded_wait(classroom):
    """Alice's role may lock the tables (it may update them); bob's ingest then fails as
    unavailable once ``lock_timeout`` has passed (the ingest retries it and reports it),
    instead of waiting as long as she holds the lock; once she lets go it goes in."""
    import threading

    from themisto_ext.store import StoreUnavailable
    from themisto_ext.store.postgres import SESSION_LIMITS

    alice_url, _ = classroom["alice"]
    _, bob = classroom["bob"]
    assert "lock_timeout=10s" in SESSION_LIMITS
    held = psycopg.connect(alice_url.target, password=alice_url.password)
    outcome: list[object] = []
    try:
        held.execute("LOCK TABLE trajectories, steps IN ACCESS EXCLUSIVE MODE")

        def ingest() -> None:
            try:
                outcome.append(apply(bob, [step("t-bob", 3)], "/home/bob/j.jsonl",
                                     ("/home/bob/j.jsonl", 150), user="bob"))
            except Exception as exc:  # reported below
                outcome.append(exc)

        worker = threading.Thread(target=ingest, daemon=True)
        worker.start()
        worker.join(timeout=120)  # unbounded, it would wait as long as alice holds on
        assert outcome and isinstance(outcome[0], StoreUnavailable), outcome
        assert "lock timeout" in str(outcome[0]) and "postgresql://" not in str(outcome[0])
    finally:
        held.close()
    assert len(apply(bob, [step("t-bob", 3)], "/home/bob/j.jsonl", ("/home/bob/j.jsonl", 150),
                     user="bob").steps) == 1
    with bob._pool.connection() as conn:  # type: ignore[attr-defined]
        limits = {name: conn.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
                  for name in ("statement_timeout", "idle_in_transaction_session_timeout")}
    assert limits == {"statement_timeout": "1min", "idle_in_transaction_session_timeout": "1min"}


def test_a_trajectory_id_taken_by_another_users_role_is_refused_not_dropped(classroom):
    """Finding 1 of issue 40: alice's role stores a row under bob's next trajectory id
    before bob's first step lands; bob's apply says so (``refused``) instead of taking the
    row as his and losing every step to row-level security."""
    alice_url, _ = classroom["alice"]
    _, bob = classroom["bob"]
    sql(alice_url, "INSERT INTO trajectories (id, kernel_id, started_at, user_name) "
                   "VALUES ('t-bob-next', 'k', '2026-01-01', 'alice')")
    applied = apply(bob, [start("t-bob-next", kernel="k-bob2"), step("t-bob-next", 1)],
                    "/home/bob/j2.jsonl", ("/home/bob/j2.jsonl", 50), user="bob")
    assert applied.refused == {"t-bob-next": "k-bob2"} and applied.steps == []
    assert sql(classroom["owner"], "SELECT user_name, steps FROM trajectories "
                                   "WHERE id = 't-bob-next'") == [("alice", 0)]
    again = apply(bob, [start("t-bob-next", kernel="k-bob2")], "/home/bob/j2.jsonl", None,
                  user="bob")
    assert again.refused == {"t-bob-next": "k-bob2"}  # a replay is refused again, not taken
    own = apply(bob, [start("t-bob", kernel="k-bob")], "/home/bob/j.jsonl", None, user="bob")
    assert own.refused == {}  # his own, replayed: no refusal


def test_a_users_quota_stops_their_writes_with_a_clear_error_and_no_one_elses(classroom):
    """Finding 5 of issue 40: a role wrote 200 MB in 8 s. Past the quota a write fails whole
    (by the journal's ingest or by SQL alike), saying so; others write on; a user's own
    deletion gives the space back; the usage table is not the user's to change."""
    from themisto_ext.store import StoreError, StoreUnavailable

    roles: StoreRoles = classroom["roles"]
    alice_url, alice = classroom["alice"]
    _, bob = classroom["bob"]
    used, steps = roles.usage("alice")
    assert used > 0 and steps == 2  # counted as her server wrote them
    roles.set_quota(used + 40_000, None)
    try:
        big = step("t-alice", 3)
        big["output"] = "x" * 60_000
        with pytest.raises(StoreError, match="storage quota reached") as reached:
            apply(alice, [big], "/home/alice/j.jsonl", ("/home/alice/j.jsonl", 200),
                  user="alice")
        # hers, not the store's state: nothing holds back other users' writes for it
        assert not isinstance(reached.value, StoreUnavailable)
        assert [s["step"] for s in alice.iter_steps("t-alice")] == [1, 2]  # nothing of it
        assert roles.usage("alice") == (used, 2)
        with pytest.raises(psycopg.Error, match="storage quota reached"):
            sql(alice_url, "INSERT INTO events (trajectory_id, at, kind, detail) "
                           "VALUES ('t-alice', 'now', 'junk', repeat('y', 100000))")
        filler = step("t-alice", 3)
        filler["output"] = "w" * 38_000
        assert len(apply(alice, [filler], "/home/alice/j.jsonl", ("/home/alice/j.jsonl", 200),
                         user="alice").steps) == 1  # under the quota, she records on
        bigger = step("t-bob", 3)
        bigger["output"] = "z" * 30_000  # with alice at her quota, bob's are his own
        assert len(apply(bob, [bigger], "/home/bob/j.jsonl", ("/home/bob/j.jsonl", 300),
                         user="bob").steps) == 1
        for statement in ("UPDATE themisto_usage SET bytes = 0",
                          "UPDATE themisto_quota SET max_bytes = NULL",
                          "DROP TRIGGER charge_insert ON steps"):
            with pytest.raises(psycopg.Error):
                sql(alice_url, statement)
        assert alice.delete_trajectory("t-alice")
        assert roles.usage("alice")[1] == 0 and roles.usage("alice")[0] < used
    finally:
        roles.set_quota(None, None)

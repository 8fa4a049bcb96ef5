"""§12: team memory on PostgreSQL, beyond the behaviour suite (which runs
on both media through the ``store`` fixture): several processes, isolation,
the faults, the schema version, moving a project between the backends."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_mcp import call, mcp_session, run_session

import membolt
from membolt import MemoryStore, StoreBusyError, StoreError, StoreVersionError
from membolt.mcp import MemoryService

from support.postgres_server import PASSWORD, PostgresServer
from support.processes import WORKER, hold_store, stop

pytestmark = pytest.mark.slow


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "membolt.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def rows(server: PostgresServer, project: str, condition: str = "true") -> list[list[str]]:
    """``(key, value)`` of the project's live entries that meet ``condition``."""
    return server.sql(
        "SELECT key, value FROM membolt_memory "
        f"WHERE project = '{project}' AND {condition} ORDER BY key"
    )


# ----- opening -------------------------------------------------------------------


def test_a_url_opens_a_project_named_without_the_password(
    postgres_server: PostgresServer, project: str
) -> None:
    for scheme in ("postgresql://", "postgres://"):
        url = postgres_server.url().replace("postgresql://", scheme)
        store = MemoryStore(url, project=project)
        assert store.path is None
        assert store.location == f"{postgres_server.location_prefix} (project {project})"
        assert PASSWORD not in repr(store)
        store.save("k", scheme)
        assert rows(postgres_server, project) == [["k", scheme]]


def test_a_url_needs_a_project_and_a_file_takes_none(postgres_url: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a project"):
        MemoryStore(postgres_url)
    with pytest.raises(ValueError, match="PostgreSQL store"):
        MemoryStore(tmp_path / "m.redb", project="acme")
    for bad in ("", "a\0b", "p" * 1025):
        with pytest.raises(ValueError, match="project"):
            MemoryStore(postgres_url, project=bad)
    with pytest.raises(ValueError, match="postgresql://"):
        MemoryStore.for_project(db="memory.redb")


def test_for_project_takes_db_and_url_only_as_its_old_name(
    postgres_url: str, tmp_path: Path
) -> None:
    """One name for the database argument, as in open_store(db=) and --db."""
    with pytest.warns(DeprecationWarning, match="for_project\\(db=...\\)"):
        old = MemoryStore.for_project(tmp_path, url=postgres_url)
    new = MemoryStore.for_project(tmp_path, db=postgres_url)
    assert old.location == new.location == membolt.open_store(postgres_url, tmp_path).location
    with pytest.raises(ValueError, match="give db only"):
        MemoryStore.for_project(tmp_path, db=postgres_url, url=postgres_url)


def test_for_project_and_open_store_read_the_environment(
    postgres_url: str, project: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "checkout"
    # An explicit url; the project defaults to the checkout's encoded path.
    store = MemoryStore.for_project(here, db=postgres_url)
    assert store.location.endswith(f"(project {membolt.encode_cwd(str(here))})")
    monkeypatch.setenv("MEMBOLT_DATABASE_URL", postgres_url)
    assert MemoryStore.for_project(here).path is None
    monkeypatch.setenv("MEMBOLT_PROJECT", project)
    assert membolt.open_store(cwd=here).location.endswith(f"(project {project})")
    assert MemoryStore.for_project(here, project="named").location.endswith("(project named)")
    # An explicit file or base directory still means a file.
    assert membolt.open_store(tmp_path / "f.redb").path == tmp_path / "f.redb"
    assert MemoryStore.for_project(here, base_dir=tmp_path).path is not None


# ----- several processes, several projects ----------------------------------------


def test_processes_on_one_project_lose_no_write_and_keep_caps_exact(
    postgres_url: str, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMBOLT_PROJECT", project)
    names, count = ["p0", "p1", "p2"], 40

    def run_all(mode: str) -> None:
        workers = [
            subprocess.Popen([sys.executable, WORKER, mode, postgres_url, name, str(count)])
            for name in names
        ]
        for worker in workers:
            assert worker.wait(timeout=300) == 0

    run_all("write-delete")
    store = MemoryStore(postgres_url, project=project)
    for name in names:
        # Every key but those deleted (the one before every third).
        written = {f"{name}:w{i}" for i in range(count)}
        deleted = {f"{name}:w{i - 1}" for i in range(count) if i % 3 == 2}
        assert {k for k in store.keys() if k.startswith(f"{name}:")} == written - deleted
    run_all("capped")
    keys = set(store.keys())
    for name in names:
        assert {f"{name}:status{i}" for i in range(count)} <= keys
    # §6.7 under contention: each batch's caps counted every process's
    # entries (the tool's results, and the notes of the first round).
    assert len([k for k in keys if k.startswith("tool:shared:")]) == 20
    assert len([e for e in store.entries() if e.type == "note"]) == 50
    stamps = [e.updated_at for e in store.entries()]
    assert len(set(stamps)) == len(stamps)  # §1.3: strictly increasing across clients


def test_projects_are_isolated_whatever_their_names_and_keys(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    hostile = "acme'; DROP TABLE membolt_entries; --"
    a = MemoryStore(postgres_url, project=hostile)
    b = MemoryStore(postgres_url, project=hostile + " ")
    for store, value in ((a, "of a"), (b, "of b")):
        store.save("k", value)
        store.save('it\'s "quoted" \\', value, references=["k"])
    assert a.get("k").value == "of a"
    assert b.get("k").value == "of b"
    assert a.delete("k")
    assert "k" not in a
    assert b.get("k").value == "of b"
    assert len(a) == 1
    assert len(b) == 2
    assert b.children("k") == ['it\'s "quoted" \\']
    assert a.children("k") == []
    # The names were data: two projects, and the table is still there.
    named = "SELECT count(*) FROM membolt_projects WHERE starts_with(name, 'acme''; DROP')"
    assert postgres_server.sql(named) == [["2"]]


def test_changes_of_other_processes_are_seen_deletions_included(
    postgres_url: str, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(postgres_url, project=project)
    store.save("mine", "1")
    store.save("doomed", "2")
    assert len(store) == 2
    monkeypatch.setenv("MEMBOLT_PROJECT", project)
    code = (
        "import sys, membolt; s = membolt.open_store(sys.argv[1]); "
        "s.save('theirs', 'x'); s.delete('doomed'); s.save('mine', 'changed')"
    )
    subprocess.run([sys.executable, "-c", code, postgres_url], check=True, timeout=60)
    assert store.keys() == ["mine", "theirs"]
    assert store.get("mine").value == "changed"


def test_a_reader_behind_the_kept_tombstones_reloads(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    reader = MemoryStore(postgres_url, project=project)
    reader.save("stays", "1")
    reader.save("goes", "2")
    assert len(reader) == 2
    writer_code = (
        "import sys, membolt; s = membolt.MemoryStore(sys.argv[1], project=sys.argv[2]); "
        "s.delete('goes')"
    )
    subprocess.run([sys.executable, "-c", writer_code, postgres_url, project], check=True)
    # As a purge would leave it: the tombstone forgotten, the horizon moved.
    postgres_server.sql(
        "DELETE FROM membolt_entries WHERE deleted; "
        f"UPDATE membolt_projects SET purged_seq = seq WHERE name = '{project}'"
    )
    assert reader.keys() == ["stays"]


def test_writes_purge_old_tombstones(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    store = MemoryStore(postgres_url, project=project)
    for key in ("a", "b", "c"):
        store.save(key, "v")
    store.delete("a")
    store.delete("b")
    tombstones = "SELECT count(*) FROM membolt_entries WHERE deleted"
    mine = f" AND project_id = {project_id(postgres_server, project)}"
    assert postgres_server.sql(tombstones + mine) == [["2"]]
    # Jump to just before a purge (1024 * 10): the next write forgets the
    # tombstones older than 8192 changes.
    postgres_server.sql(f"UPDATE membolt_projects SET seq = 10239 WHERE name = '{project}'")
    store.save("d", "v")
    assert postgres_server.sql(tombstones + mine) == [["0"]]
    assert postgres_server.sql(
        f"SELECT seq, purged_seq FROM membolt_projects WHERE name = '{project}'"
    ) == [["10240", "2048"]]
    assert MemoryStore(postgres_url, project=project).keys() == ["c", "d"]


def project_id(server: PostgresServer, project: str) -> str:
    return server.sql(f"SELECT id FROM membolt_projects WHERE name = '{project}'")[0][0]


# ----- locks ---------------------------------------------------------------------------


def test_busy_while_another_process_holds_the_project(
    postgres_url: str, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMBOLT_PROJECT", project)
    holder = hold_store(postgres_url, 30)
    try:
        store = MemoryStore(postgres_url, project=project, timeout=0.3)
        assert store.get("held-by-child") is not None  # readers never wait
        with pytest.raises(StoreBusyError) as busy:
            store.save("k", "v")
        assert "127.0.0.1" in str(busy.value)
        assert "k" not in store
        # Another project of the same server does not wait.
        MemoryStore(postgres_url, project=project + "-other", timeout=0.3).save("k", "v")
    finally:
        stop(holder)
    # The holder's session ended with it, and with it the lock.
    store.save("k", "v")
    assert store.get("k") is not None


def test_hold_keeps_other_writers_out_until_the_block_ends(postgres_url: str, project: str) -> None:
    store = MemoryStore(postgres_url, project=project)
    code = (
        "import sys, membolt\n"
        "s = membolt.MemoryStore(sys.argv[1], project=sys.argv[2], timeout=0.3)\n"
        "try:\n    s.save('other', 'v')\nexcept membolt.StoreBusyError:\n    print('busy')\n"
    )

    def other_writer() -> str:
        return subprocess.run(
            [sys.executable, "-c", code, postgres_url, project],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout.strip()  # fmt: skip

    with store.hold():
        store.save("mine", "v")
        with store.hold():  # nested: one lock
            store.save("mine2", "v")
        assert other_writer() == "busy"
    assert other_writer() == ""
    assert store.keys() == ["mine", "mine2", "other"]


def terminate_membolt_sessions(server: PostgresServer) -> None:
    server.sql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'membolt'"
    )


def test_a_hold_whose_lock_was_lost_fails_at_the_next_call(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    store = MemoryStore(postgres_url, project=project, timeout=2)
    code = (
        "import sys, membolt\n"
        "membolt.MemoryStore(sys.argv[1], project=sys.argv[2], timeout=5).save('other', 'v')\n"
    )
    with store.hold():
        store.save("mine", "1")
        terminate_membolt_sessions(postgres_server)  # the lock goes with the session
        # Another process writes while the holder thinks it holds the lock.
        subprocess.run([sys.executable, "-c", code, postgres_url, project], check=True, timeout=60)
        for call in (lambda: store.save("late", "2"), lambda: store.get("mine")):
            with pytest.raises(StoreError, match="lock of this hold\\(\\) block was lost"):
                call()
    # The block is over: the store works again, and "late" was never written.
    store.save("after", "3")
    assert store.keys() == ["after", "mine", "other"]


# ----- one connection per connection settings -------------------------------------------


def test_a_wrong_password_fails_while_a_right_one_is_open(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    right = MemoryStore(postgres_url, project=project)
    right.save("k", "v")  # connected
    wrong = MemoryStore(postgres_server.url(password="Wr0ng-Pa55word"), project=project, timeout=1)
    with pytest.raises(StoreError, match="password authentication failed"):
        wrong.get("k")
    with pytest.raises(StoreError, match="password authentication failed"):
        wrong.save("k2", "v")
    assert right.keys() == ["k"]


def test_a_wrong_password_first_does_not_spoil_a_right_one(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    wrong = MemoryStore(postgres_server.url(password="Wr0ng-Pa55word"), project=project, timeout=1)
    with pytest.raises(StoreError):
        wrong.get("k")
    right = MemoryStore(postgres_url, project=project)
    right.save("k", "v")
    assert right.get("k") is not None
    with pytest.raises(StoreError):
        wrong.get("k")  # and the wrong one stays wrong


@pytest.fixture
def other_schema(postgres_server: PostgresServer) -> Iterator[str]:
    name = f"membolt_{uuid.uuid4().hex[:8]}"
    postgres_server.sql(f"CREATE SCHEMA {name}")
    try:
        yield name
    finally:
        postgres_server.sql(f"DROP SCHEMA {name} CASCADE")


def test_options_of_a_second_store_are_honoured(
    postgres_server: PostgresServer, postgres_url: str, project: str, other_schema: str
) -> None:
    public = MemoryStore(postgres_url, project=project)
    public.save("in-public", "v")
    elsewhere = MemoryStore(
        postgres_server.url(options=f"-csearch_path={other_schema}"), project=project
    )
    elsewhere.save("in-schema", "v")
    assert elsewhere.keys() == ["in-schema"]  # its own tables, not public's
    assert public.keys() == ["in-public"]
    in_schema = postgres_server.sql(f"SELECT key FROM {other_schema}.membolt_entries")
    assert in_schema == [["in-schema"]]


# ----- faults ----------------------------------------------------------------------------


def test_a_server_restart_is_survived_without_reopening(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    store = MemoryStore(postgres_url, project=project, timeout=2)
    store.save("before", "1")
    postgres_server.stop()
    try:
        with pytest.raises(StoreError) as down:
            store.save("during", "2")
        assert not isinstance(down.value, StoreBusyError)
        assert f"127.0.0.1:{postgres_server.port}" in str(down.value)
        assert PASSWORD not in str(down.value)
        with pytest.raises(StoreError):
            store.get("before")
    finally:
        postgres_server.start()
    # The same handle: it connects again by itself.
    assert store.get("before").value == "1"
    store.save("after", "3")
    assert store.keys() == ["after", "before"]


def test_a_connection_ended_between_calls_is_replaced(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    store = MemoryStore(postgres_url, project=project)
    store.save("a", "1")
    postgres_server.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE application_name = 'membolt'")  # fmt: skip
    store.save("b", "2")  # the dead connection is noticed and replaced
    assert store.keys() == ["a", "b"]


@pytest.fixture
def stalling_writes(postgres_server: PostgresServer) -> Iterator[None]:
    """A trigger that stalls every write of a ``slow:`` key for a minute, so
    that a write can be caught in the middle."""
    postgres_server.sql(
        "CREATE OR REPLACE FUNCTION membolt_test_stall() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN IF NEW.key LIKE 'slow:%' THEN PERFORM pg_sleep(60); END IF; RETURN NEW; END $$; "
        "CREATE TRIGGER membolt_test_stall BEFORE INSERT OR UPDATE ON membolt_entries "
        "FOR EACH ROW EXECUTE FUNCTION membolt_test_stall()"
    )
    try:
        yield
    finally:
        postgres_server.sql(
            "DROP TRIGGER membolt_test_stall ON membolt_entries; DROP FUNCTION membolt_test_stall()"
        )


@pytest.mark.usefixtures("stalling_writes")
def test_a_connection_dropped_mid_write_applies_nothing(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    store = MemoryStore(postgres_url, project=project)
    store.save("kept", "0")
    failures: list[BaseException] = []

    def write() -> None:
        try:
            store.save_many([("first", "1"), ("slow:second", "2"), ("third", "3")])
        except BaseException as error:  # handed to the test thread
            failures.append(error)

    writer = threading.Thread(target=write)
    writer.start()
    [[pid]] = postgres_server.wait_until(
        "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' "
        "AND application_name = 'membolt'"
    )
    postgres_server.sql(f"SELECT pg_terminate_backend({pid})")
    writer.join(timeout=60)
    assert len(failures) == 1
    assert isinstance(failures[0], StoreError)
    assert "nothing of it was applied" in str(failures[0])
    # Nothing on the server, nothing in the mirror.
    assert rows(postgres_server, project) == [["kept", "0"]]
    assert store.keys() == ["kept"]
    # The next call works on a new connection.
    store.save("after", "4")
    assert store.keys() == ["after", "kept"]


@pytest.mark.usefixtures("stalling_writes")
def test_a_statement_timeout_is_a_store_error_and_applies_nothing(
    postgres_server: PostgresServer, project: str
) -> None:
    url = postgres_server.url(options="-c statement_timeout=300")
    store = MemoryStore(url, project=project)
    store.save("kept", "0")
    with pytest.raises(StoreError, match="statement timeout") as cancelled:
        store.save_many([("first", "1"), ("slow:second", "2")])
    assert "127.0.0.1" in str(cancelled.value)
    assert rows(postgres_server, project) == [["kept", "0"]]
    assert store.keys() == ["kept"]
    store.save("after", "1")  # the same connection goes on
    assert store.keys() == ["after", "kept"]


def test_wrong_credentials_never_show_the_password(
    postgres_server: PostgresServer, project: str, tmp_path: Path
) -> None:
    wrong = "Wr0ng-Pa55word"
    url = postgres_server.url(password=wrong)
    store = MemoryStore(url, project=project, timeout=1)
    with pytest.raises(StoreError) as refused:
        store.get("k")
    texts = [str(refused.value), repr(refused.value), repr(store), store.location]
    assert "password authentication failed" in texts[0]
    assert "127.0.0.1" in texts[0]
    # The CLI and the MCP server.
    listed = cli("--db", url, "--project", project, "list")
    assert listed.returncode == 1
    assert listed.stderr.count("\n") == 1
    texts += [listed.stdout, listed.stderr]
    service = MemoryService(url, project=project, timeout=1)
    reply = service.call_tool("memory_list", {})
    assert "password authentication failed" in reply
    texts.append(reply)
    for text in texts:
        assert wrong not in text
        assert PASSWORD not in text


def test_a_newer_schema_is_refused(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    MemoryStore(postgres_url, project=project).save("k", "v")
    postgres_server.sql("UPDATE membolt_schema SET version = version + 1")
    try:
        with pytest.raises(StoreVersionError, match="newer membolt"):
            MemoryStore(postgres_url, project=project + "-new").get("k")
    finally:
        postgres_server.sql("UPDATE membolt_schema SET version = version - 1")


def test_a_row_changed_by_hand_is_damage(
    postgres_server: PostgresServer, postgres_url: str, project: str
) -> None:
    MemoryStore(postgres_url, project=project).save("k", "the value saved")
    postgres_server.sql(
        "UPDATE membolt_entries SET value = 'edited' WHERE key = 'k' AND project_id = "
        f"{project_id(postgres_server, project)}"
    )
    assert MemoryStore(postgres_url, project=project + "x").get("k") is None  # another project
    with pytest.raises(membolt.CorruptStoreError, match='"k"'):
        MemoryStore(postgres_url, project=project).get("k")
    doctor = cli("--db", postgres_url, "--project", project, "doctor")
    assert doctor.returncode == 1
    assert "PROBLEM" in doctor.stdout


# ----- the command line, moving between the backends ---------------------------------


def test_export_and_import_move_a_project_between_backends_losslessly(
    postgres_url: str, project: str, tmp_path: Path
) -> None:
    source = MemoryStore(tmp_path / "source.redb")
    source.save("prompt:build", "Add /users endpoint")
    source.save("tool:write:1", "wrote handlers/users.go")
    source.save("k\0nul", "v\0al\uffff 世界", type="", namespace="ns")
    source.save("result:build", "compiles", references=["prompt:build", "tool:write:1", "gone"])
    source.delete("prompt:build")
    from_redb, from_postgres, back = (tmp_path / name for name in ("a.jsonl", "b.jsonl", "c.jsonl"))
    database = ["--db", postgres_url, "--project", project]
    steps = [
        ["--db", str(tmp_path / "source.redb"), "export", "-o", str(from_redb)],
        [*database, "import", str(from_redb)],
        [*database, "export", "-o", str(from_postgres)],
        ["--db", str(tmp_path / "back.redb"), "import", str(from_postgres)],
        ["--db", str(tmp_path / "back.redb"), "export", "-o", str(back)],
    ]
    for step in steps:
        done = cli(*step)
        assert done.returncode == 0, done.stderr
    assert from_redb.read_bytes() == from_postgres.read_bytes() == back.read_bytes()
    assert len(from_redb.read_text().splitlines()) == 4  # header + 3 entries
    stats = cli(*database, "stats")
    assert "entries: 3" in stats.stdout
    assert PASSWORD not in stats.stdout
    doctor = cli(*database, "doctor")
    assert doctor.returncode == 0
    assert "ok: every row passed its checksum" in doctor.stdout


def test_the_cli_reads_the_environment(postgres_url: str, project: str, tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "MEMBOLT_HOME": str(tmp_path / "home"),
        "MEMBOLT_DATABASE_URL": postgres_url,
        "MEMBOLT_PROJECT": project,
    }
    assert cli("save", "decision:db", "PostgreSQL", env=env).returncode == 0
    assert cli("get", "decision:db", env=env).stdout == "PostgreSQL\n"
    assert MemoryStore(postgres_url, project=project).get("decision:db").value == "PostgreSQL"
    assert not (tmp_path / "home").exists()  # no file was made
    refused = cli("--db", str(tmp_path / "x.redb"), "--project", "p", "list")
    assert refused.returncode == 2
    assert "--project" in refused.stderr


def test_the_mcp_server_serves_a_project(postgres_url: str, project: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with mcp_session(tmp_path, "--db", postgres_url, "--project", project) as session:
            saved = await call(session, "memory_save", {"key": "decision:db", "value": "shared"})
            assert saved[1] is False
            text, is_error = await call(session, "memory_list", {})
            assert not is_error
            assert "decision:db" in text

    run_session(main)
    assert MemoryStore(postgres_url, project=project).get("decision:db").value == "shared"


# ----- TLS -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_server() -> Iterator[PostgresServer]:
    server = PostgresServer(tls_name="membolt.test")
    try:
        server.start()
        yield server
    finally:
        server.destroy()


def connection_uses_tls(server: PostgresServer, **params: str) -> bool:
    """Opens a store with ``params`` on ``server``, saves, and says whether
    its connection is encrypted."""
    name = f"tls-{uuid.uuid4().hex[:8]}"
    store = MemoryStore(server.url(application_name=name, **params), project=name, timeout=2)
    store.save("k", "v")
    [[ssl]] = server.sql(
        "SELECT ssl FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) "
        f"WHERE application_name = '{name}'"
    )
    return ssl == "t"


def test_sslmode_as_libpq_means_it(tls_server: PostgresServer) -> None:
    assert tls_server.certificate is not None
    root = str(tls_server.certificate)
    assert not connection_uses_tls(tls_server, sslmode="disable")
    assert connection_uses_tls(tls_server)  # prefer: a self-signed certificate is taken
    assert connection_uses_tls(tls_server, sslmode="require")
    # The chain of the certificate given; its name (membolt.test) is not 127.0.0.1.
    assert connection_uses_tls(tls_server, sslmode="verify-ca", sslrootcert=root)
    for refused in ({"sslmode": "verify-full", "sslrootcert": root}, {"sslmode": "verify-full"}):
        with pytest.raises(StoreError, match="certificate") as failed:
            connection_uses_tls(tls_server, **refused)
        assert PASSWORD not in str(failed.value)


def test_require_refuses_a_server_without_tls(postgres_server: PostgresServer) -> None:
    with pytest.raises(StoreError, match=r"127\.0\.0\.1"):
        connection_uses_tls(postgres_server, sslmode="require")

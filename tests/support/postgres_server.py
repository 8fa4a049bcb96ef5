"""A throwaway PostgreSQL server for the tests and benchmarks of §12.

It runs the machine's own PostgreSQL binaries: ``initdb`` in a new
directory, then ``postgres`` listening on 127.0.0.1 on a free port, with
password (scram-sha-256) authentication only, stopped and deleted at the
end. initdb and postgres refuse to run as root, so as root the server runs
as an unprivileged system user (``postgres`` when it exists, else
``nobody``) that owns the directory.

``python tests/support/postgres_server.py`` starts one and prints its URL
until interrupted (for trying things by hand).

When no PostgreSQL binaries exist, :func:`find_binaries` raises
:class:`PostgresMissingError`; the test fixture turns that into a failure (CI
must not skip the §12 tests silently) unless ``MEMBOLT_SKIP_POSTGRES=1`` asks
a local run to skip them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

#: The database, role and password of every throwaway server.
DATABASE = "membolt"
ADMIN = "membolt_admin"
PASSWORD = "s3cret-pw-never-shown"

#: Where Debian puts each major version's server binaries.
DEBIAN_BINARIES = "/usr/lib/postgresql/*/bin"


class PostgresMissingError(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def find_binaries() -> Path:
    """The directory holding ``initdb``, ``pg_ctl``, ``postgres`` and ``psql``:
    ``$MEMBOLT_PG_BIN``, the newest Debian version, or the ``PATH``."""
    candidates = [os.environ.get("MEMBOLT_PG_BIN", "")]
    candidates += sorted(glob.glob(DEBIAN_BINARIES), key=_major_version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for candidate in candidates:
        if candidate and all((Path(candidate) / tool).exists() for tool in ("initdb", "pg_ctl")):
            return Path(candidate)
    raise PostgresMissingError(
        "no PostgreSQL server binaries (initdb, pg_ctl) found: install PostgreSQL "
        "(apt-get install postgresql) or point MEMBOLT_PG_BIN at its bin directory; "
        "MEMBOLT_SKIP_POSTGRES=1 skips the PostgreSQL tests on a machine without it"
    )


def _major_version(directory: str) -> int:
    name = Path(directory).parent.name
    return int(name) if name.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresServer:
    """One throwaway server. ``durable=False`` (the tests) turns fsync off,
    which only matters if the machine crashes; the benchmarks keep the
    server's defaults."""

    def __init__(self, *, durable: bool = False, tls_name: str | None = None) -> None:
        self.bin = find_binaries()
        #: With ``tls_name``, the server offers TLS with a self-signed
        #: certificate for that DNS name, ``certificate`` (a PEM file).
        self.tls_name = tls_name
        self.certificate: Path | None = None
        self.host = "127.0.0.1"
        self.port = _free_port()
        self.durable = durable
        self._user = self._server_user()
        self.directory = Path(tempfile.mkdtemp(prefix="membolt-pg-"))
        self.data = self.directory / "data"
        self.log = self.directory / "server.log"
        self._initdb()

    # ----- addresses -------------------------------------------------------

    def url(self, user: str = ADMIN, password: str = PASSWORD, **params: str) -> str:
        """A ``postgresql://`` URL of the test database."""
        query = "&".join(f"{key}={quote(value)}" for key, value in params.items())
        address = (
            f"postgresql://{quote(user, safe='')}:{quote(password, safe='')}"
            f"@{self.host}:{self.port}/{DATABASE}"
        )
        return f"{address}?{query}" if query else address

    @property
    def location_prefix(self) -> str:
        """How membolt names this server in messages (no password)."""
        return f"postgresql://{ADMIN}@{self.host}:{self.port}/{DATABASE}"

    # ----- life cycle ------------------------------------------------------

    def _server_user(self) -> pwd.struct_passwd | None:
        """The user the server runs as: none (ourselves) unless we are root."""
        if os.geteuid() != 0:
            return None
        for name in ("postgres", "nobody"):
            try:
                return pwd.getpwnam(name)
            except KeyError:
                continue
        raise PostgresMissingError("running as root, and no unprivileged user to run PostgreSQL as")

    def _as_server_user(self, command: list[str]) -> list[str]:
        if self._user is None:
            return command
        return [
            "setpriv",
            f"--reuid={self._user.pw_uid}",
            f"--regid={self._user.pw_gid}",
            "--clear-groups",
            *command,
        ]

    def _run(self, command: list[str]) -> None:
        subprocess.run(
            self._as_server_user(command),
            check=True,
            capture_output=True,
            text=True,
            cwd=self.directory,
            timeout=120,
        )

    def _initdb(self) -> None:
        password_file = self.directory / "password"
        password_file.write_text(PASSWORD + "\n")
        if self._user is not None:
            os.chown(self.directory, self._user.pw_uid, self._user.pw_gid)
            os.chown(password_file, self._user.pw_uid, self._user.pw_gid)
        self._run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                ADMIN,
                f"--pwfile={password_file}",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ]
        )
        password_file.unlink()
        settings = [
            "listen_addresses = '127.0.0.1'",
            f"port = {self.port}",
            f"unix_socket_directories = '{self.directory}'",
            "max_connections = 60",
            "shared_buffers = 64MB",
            "log_min_messages = warning",
        ]
        if not self.durable:
            settings += ["fsync = off", "synchronous_commit = off", "full_page_writes = off"]
        if self.tls_name is not None:
            settings += self._make_certificate(self.tls_name)
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write("\n".join(settings) + "\n")

    def _make_certificate(self, name: str) -> list[str]:
        """A test certificate authority (``self.certificate``) and a server
        certificate it signed for ``name``."""
        self.certificate = self.directory / "ca.crt"
        ca_key, key, request = (self.directory / n for n in ("ca.key", "server.key", "server.csr"))
        cert, extensions = self.directory / "server.crt", self.directory / "server.ext"
        extensions.write_text(f"subjectAltName=DNS:{name}\nbasicConstraints=CA:FALSE\n")
        steps = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
             "/CN=membolt test CA", "-keyout", str(ca_key), "-out", str(self.certificate)],
            ["req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
             "-keyout", str(key), "-out", str(request)],
            ["x509", "-req", "-in", str(request), "-CA", str(self.certificate), "-CAkey",
             str(ca_key), "-CAcreateserial", "-days", "2", "-extfile", str(extensions),
             "-out", str(cert)],
        ]  # fmt: skip
        for step in steps:
            subprocess.run(["openssl", *step], check=True, capture_output=True, timeout=60)
        for path in (key, cert):
            path.chmod(0o600)
            if self._user is not None:
                os.chown(path, self._user.pw_uid, self._user.pw_gid)
        return ["ssl = on", f"ssl_cert_file = '{cert}'", f"ssl_key_file = '{key}'"]

    def start(self) -> None:
        self._run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        if not self._has_database():
            self.sql(f"CREATE DATABASE {DATABASE}", database="postgres")

    def _has_database(self) -> bool:
        rows = self.sql(
            f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'", database="postgres"
        )
        return bool(rows)

    def stop(self, mode: str = "fast") -> None:
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"])

    def restart(self) -> None:
        self.stop()
        self.start()

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # not running
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)

    # ----- administration ----------------------------------------------------

    def sql(self, statement: str, *, database: str = DATABASE) -> list[list[str]]:
        """Runs one statement as the admin through ``psql``; returns the rows
        as lists of text (empty fields for NULL)."""
        psql = self.bin / "psql"
        if not psql.exists():
            psql = Path(shutil.which("psql") or "psql")
        done = subprocess.run(
            [
                str(psql),
                "-X",
                "-q",
                "-A",
                "-t",
                "-F",
                "\x1f",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                self.host,
                "-p",
                str(self.port),
                "-U",
                ADMIN,
                "-d",
                database,
                "-c",
                statement,
            ],
            env={**os.environ, "PGPASSWORD": PASSWORD, "PGCONNECT_TIMEOUT": "10"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return [line.split("\x1f") for line in done.stdout.splitlines() if line]

    def wait_until(self, statement: str, *, timeout: float = 30) -> list[list[str]]:
        """Runs ``statement`` until it returns a row; returns the rows."""
        deadline = time.monotonic() + timeout
        while True:
            rows = self.sql(statement)
            if rows:
                return rows
            if time.monotonic() > deadline:
                raise TimeoutError(f"no row from {statement!r} within {timeout} s")
            time.sleep(0.02)


def main() -> None:
    # A background job ignores SIGINT: stop on SIGTERM too, cleaning up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = PostgresServer(durable="--durable" in sys.argv)
    server.start()
    print(server.url(), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.destroy()


if __name__ == "__main__":
    main()

"""A throwaway local PostgreSQL server, for trying the shared gradebook without a database admin:
the tests, the scale benchmark, an instructor's dry run of a sharded class.

    with local_server() as server:
        url = server.database("class")     # postgresql://grader:...@127.0.0.1:PORT/class

Debian's `postgresql` package (installed by `make env`): initdb into a temporary folder, a free
port on 127.0.0.1 and the socket in that folder, fsync off (nothing here must survive a crash),
stopped and deleted on exit. initdb refuses to run as root, so under root the server runs as `nobody`.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import CourseError

INITDB = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


@dataclass(frozen=True)
class LocalServer:
    port: int
    password: str

    def database(self, name: str) -> str:
        """Create database ``name`` and return its URL (password included)."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="grader", password=self.password,
                             dbname="postgres", autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://grader:{self.password}@127.0.0.1:{self.port}/{name}"


def _free_port() -> int:
    """As utils.distributed.free_port, which cannot be imported here: that module loads torch."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def local_server():
    if not INITDB:
        raise CourseError("PostgreSQL is not installed: run `make env` (it installs Debian's postgresql package)")
    bin_dir, folder = INITDB[-1].parent, Path(tempfile.mkdtemp(prefix="grader-postgres-"))
    as_owner = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    password, port = secrets.token_hex(12), _free_port()
    (folder / "password").write_text(password)
    if as_owner:
        for path in (folder, folder / "password"):
            shutil.chown(path, "nobody")

    def pg(*args):
        return subprocess.run([*as_owner, *map(str, args)], check=True, capture_output=True, text=True, timeout=120)

    try:
        pg(bin_dir / "initdb", "-D", folder / "data", "-U", "grader", "--pwfile", folder / "password",
           "--auth-host=scram-sha-256", "--auth-local=trust", "--no-sync")
        pg(bin_dir / "pg_ctl", "-D", folder / "data", "-l", folder / "log", "-w", "start", "-o",
           f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off")
        yield LocalServer(port, password)
    finally:
        if (folder / "data" / "postmaster.pid").exists():
            pg(bin_dir / "pg_ctl", "-D", folder / "data", "-m", "fast", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)

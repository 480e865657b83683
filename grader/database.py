"""Where the gradebook lives: nbgrader's SQLite file in the course directory by default, or a
PostgreSQL database (``--db-url``) that several graders, e.g. the shards of a class, share.

nbgrader's API creates what is missing by looking first and inserting after (its tables, the
course, an assignment and its cells, a student, a submission), so two processes sharing a
server can both decide to insert the same row. Setting an assignment up therefore runs under a
PostgreSQL advisory lock (``exclusive``, once per grading run); recording a submission retries
instead (``gradebook.record``), so that graders write at the same time.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import warnings

from .coursedir import CourseDir
from .errors import CourseError

SQLITE_FILE = "gradebook.db"
SETUP_LOCK = 7_411_905_203  # any fixed number: the advisory-lock key of the gradebook set-up step
URL_FORM = "postgresql://USER:PASSWORD@HOST:PORT/DATABASE"


def gradebook(course_dir: CourseDir):
    """nbgrader's Gradebook on the course's database (use it as a context manager)."""
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    warnings.filterwarnings("ignore", category=SAWarning)  # nbgrader 0.9 vs SQLAlchemy 2.x session notices
    # nbgrader logs a traceback for each insert the database refuses, then raises InvalidEntry with the
    # same message: gradebook.record() retries those, and raises the last one
    logging.getLogger("tornado.application").setLevel(logging.CRITICAL)
    stamp_in_process()
    return Gradebook(url(course_dir))


def stamp_in_process() -> None:
    """nbgrader stamps a new gradebook with the head of its migrations, which ``nbgrader.api.
    get_alembic_version`` learns by running ``alembic heads`` in a subprocess that imports nbgrader
    again: over 2 s of CPU for every new gradebook (each course folder the tests make, each shard).
    alembic's own API reads the same migration scripts in this process, once."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head


@functools.cache
def alembic_head() -> str:
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(config).get_current_head()


def url(course_dir: CourseDir) -> str:
    """The SQLAlchemy URL nbgrader gets: the course's ``db_url``, or the folder's SQLite gradebook."""
    if not course_dir.db_url:
        return f"sqlite:///{course_dir.path / SQLITE_FILE}?timeout=60"
    return _driver_url(course_dir.db_url)


def _driver_url(db_url: str) -> str:
    parsed = _parse(db_url)
    if parsed.drivername == "postgresql":  # the driver installed with the grader, whichever SQLAlchemy defaults to
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def shown(course_dir: CourseDir) -> str:
    """The gradebook's location for messages: never the password."""
    return str(course_dir.path / SQLITE_FILE) if not course_dir.db_url else _hidden(course_dir.db_url)


def _hidden(db_url: str) -> str:
    return _parse(db_url).render_as_string(hide_password=True)


def _parse(db_url: str):
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(db_url)
    except ArgumentError:  # the message would repeat the URL, password and all
        raise CourseError(f"--db-url is not a database URL; expected {URL_FORM}") from None
    if parsed.get_backend_name() not in ("postgresql", "sqlite"):
        raise CourseError(f"--db-url: unsupported database {parsed.drivername!r}; expected {URL_FORM} "
                          "(or sqlite:///PATH)")
    return parsed


@contextlib.contextmanager
def _connection(db_url: str):
    """A connection to the server; one that cannot be made is a one-line CourseError."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DBAPIError

    engine = create_engine(_driver_url(db_url))
    try:
        try:
            connection = engine.connect()
        except DBAPIError as exc:
            reason = " ".join(str(exc.orig).split())  # psycopg's message spans lines
            raise CourseError(f"cannot open the gradebook {_hidden(db_url)}: {reason}") from None
        with connection:
            yield connection
    finally:
        engine.dispose()


def check(course_dir: CourseDir) -> None:
    """Fail early, in one line, on a bad URL or a server that cannot be reached or refuses us."""
    if course_dir.db_url:
        with _connection(course_dir.db_url):
            pass


def exists(course_dir: CourseDir) -> bool:
    """Whether the gradebook has been created (looking never creates it)."""
    if not course_dir.db_url:
        return (course_dir.path / SQLITE_FILE).is_file()
    from sqlalchemy import inspect

    with _connection(course_dir.db_url) as connection:
        return bool(inspect(connection).get_table_names())


@contextlib.contextmanager
def exclusive(course_dir: CourseDir):
    """One process at a time in this block, across machines, for a PostgreSQL gradebook: the lock
    lasts as long as the transaction it is taken in. A SQLite gradebook has one writer anyway."""
    if not course_dir.db_url or _parse(course_dir.db_url).get_backend_name() != "postgresql":
        yield
        return
    from sqlalchemy import text

    with _connection(course_dir.db_url) as connection, connection.begin():
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SETUP_LOCK})
        yield

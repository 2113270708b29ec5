"""Database tables as PATHs: ``sqlite:///FILE`` (SQLAlchemy's form: ``sqlite:////abs/file.db``), ``mysql://USER:
PASS@HOST:PORT/DB``, ``jdbc:mysql://HOST:PORT/DB?user=U&password=P`` and ``jdbc:mariadb://...``; ``?table=NAME``
picks another table than orth_job_log. Local reads use sqlite3 (always there) and PyMySQL for MySQL / MariaDB
(the ``mysql`` extra); ``--engine spark`` reads MySQL / MariaDB through Spark's JDBC reader instead.
"""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from ...errors import InputError, UsageError
from ...formats.orth_joblog import TABLE

SCHEMES = ("sqlite://", "mysql://", "mariadb://", "jdbc:mysql://", "jdbc:mariadb://")
_IDENT = re.compile(r"[A-Za-z0-9_$]{1,64}\Z")
#: rows fetched per round trip from a server-side cursor (memory stays bounded whatever the table's size)
FETCH = 2000


def is_db_url(p: str) -> bool:
    return p.lower().startswith(SCHEMES)


@dataclass
class DbUrl:
    kind: str                       # sqlite | mysql
    scheme: str                     # as given: sqlite, mysql, mariadb, jdbc:mysql, jdbc:mariadb
    path: str = ""                  # sqlite: the database file
    host: str = "127.0.0.1"
    port: int = 3306
    user: str | None = None
    password: str | None = None
    database: str = ""
    table: str = TABLE
    params: dict = field(default_factory=dict)   # the rest of the query (JDBC properties)


def parse(url: str) -> DbUrl:
    low = url.lower()
    jdbc = low.startswith("jdbc:")
    s = urlsplit(url[5:] if jdbc else url)
    scheme = ("jdbc:" if jdbc else "") + s.scheme.lower()
    q = dict(parse_qsl(s.query, keep_blank_values=True))
    table = q.pop("table", TABLE)
    if not _IDENT.match(table):
        raise UsageError(f"table={table!r}: not a plain table name", path=redact(url))
    if s.scheme.lower() == "sqlite":
        if jdbc:
            raise UsageError("jdbc:sqlite URLs are not read; use sqlite:///FILE", path=url)
        path = unquote(s.path[1:] if s.path.startswith("/") else s.path)
        if not path:
            raise UsageError("sqlite URL without a file (sqlite:///relative.db or sqlite:////abs/path.db)", path=url)
        return DbUrl("sqlite", "sqlite", path=path, table=table)
    user = unquote(s.username) if s.username else q.pop("user", None)
    password = unquote(s.password) if s.password is not None else q.pop("password", None)
    q.pop("user", None)
    q.pop("password", None)
    try:
        port = s.port or 3306
    except ValueError:
        raise UsageError("bad port in the URL", path=redact(url)) from None
    db = s.path.lstrip("/")
    if not db:
        raise UsageError("the URL names no database (…/orth_job)", path=redact(url))
    return DbUrl("mysql", scheme, host=s.hostname or "127.0.0.1", port=port, user=user, password=password,
                 database=unquote(db), table=table, params=q)


def redact(url: str) -> str:
    """The URL without its password (reports, findings, messages)."""
    url = re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url, flags=re.I)


def jdbc(url: str) -> tuple[str, dict]:
    """Spark's JDBC reader: (jdbc URL without credentials, properties: user, password, driver)."""
    u = parse(url)
    if u.kind != "mysql":
        raise UsageError("only MySQL / MariaDB URLs are read through JDBC", path=redact(url))
    scheme = "mariadb" if u.scheme in ("mariadb", "jdbc:mariadb") else "mysql"
    q = ("?" + urlencode(u.params)) if u.params else ""
    props = {"user": u.user or "root", "password": u.password or ""}
    return f"jdbc:{scheme}://{u.host}:{u.port}/{u.database}{q}", props


def connect(url: str):
    """A read-only DB-API connection for a local read."""
    u = parse(url)
    if u.kind == "sqlite":
        import os
        if not os.path.isfile(u.path):
            raise InputError("no such SQLite database file", path=u.path)
        try:
            return sqlite3.connect(f"file:{u.path}?mode=ro", uri=True)
        except sqlite3.Error as e:
            raise InputError(f"cannot open the SQLite database: {e}", path=u.path) from None
    try:
        import pymysql
    except ImportError:
        raise UsageError("reading a MySQL / MariaDB table locally needs PyMySQL (pip install 'wqtool[mysql]'); or "
                         "read it with --engine spark (JDBC)", path=redact(url)) from None
    try:
        return pymysql.connect(host=u.host, port=u.port, user=u.user or "root", password=u.password or "",
                               database=u.database, charset="utf8mb4", connect_timeout=10, read_timeout=600,
                               cursorclass=pymysql.cursors.SSCursor)
    except pymysql.MySQLError as e:
        raise InputError(f"cannot connect: {e.args[-1] if e.args else e}", path=redact(url)) from None


def _is_sqlite(conn) -> bool:
    return isinstance(conn, sqlite3.Connection)


def columns(conn, table: str) -> list[str] | None:
    """The table's column names in order, or None if it does not exist."""
    cur = conn.cursor()
    try:
        if _is_sqlite(conn):
            cur.execute(f'PRAGMA table_info("{table}")')
            names = [r[1].lower() for r in cur.fetchall()]
        else:
            cur.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND "
                        "table_name = %s ORDER BY ordinal_position", (table,))
            names = [r[0].lower() for r in cur.fetchall()]
    finally:
        cur.close()
    return names or None


def select_rows(conn, table: str, names: list[str]):
    """Every row (a list of values in ``names`` order), in id order, streamed."""
    q = '"' if _is_sqlite(conn) else "`"
    order = (f" ORDER BY {q}id{q}" + (", rowid" if _is_sqlite(conn) else "")) if "id" in names else ""
    cur = conn.cursor()
    try:
        cur.execute(f"SELECT {', '.join(q + n + q for n in names)} FROM {q}{table}{q}{order}")
        while True:
            batch = cur.fetchmany(FETCH)
            if not batch:
                return
            for r in batch:
                yield list(r)
    finally:
        cur.close()

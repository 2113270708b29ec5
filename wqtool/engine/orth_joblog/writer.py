"""Writing orth_job_log rows: the project's own writers of every source the reader takes (CSV, JSON Lines,
Parquet, mysqldump, SQLite, a MySQL / MariaDB table), for fixtures, benchmarks, tests and ``serve --orth-admin``.

A row is a dict column -> value (int, str, None; datetimes as ``YYYY-MM-DD HH:MM:SS`` text); missing columns are
NULL (or the column's default).
"""
from __future__ import annotations

import json
import os
import sqlite3

from ...formats.orth_joblog import (BY_NAME, COLUMN_NAMES, COLUMNS, REGISTRY_COLUMN_NAMES, REGISTRY_COLUMNS,
                                    REGISTRY_TABLE, TABLE, create_table_sql)
from ..fsops import fsync_dir, write_new


def _val(row: dict, name: str):
    if name in row:
        return row[name]
    c = BY_NAME.get(name)
    return c.default if c is not None else None


def _csv_field(v) -> str:
    if v is None:
        return ""
    if isinstance(v, int):
        return str(v)
    return '"' + str(v).replace('"', '""') + '"'


def csv_bytes(rows, columns=COLUMN_NAMES) -> bytes:
    """A header row, then one record per row: ints bare, strings quoted, NULL an empty unquoted field, ``\\n``
    line ends (a quoted field may hold newlines)."""
    out = [",".join(columns)]
    for r in rows:
        out.append(",".join(_csv_field(r.get(c) if c not in COLUMN_NAMES else _val(r, c)) for c in columns))
    return ("\n".join(out) + "\n").encode("utf-8")


def jsonl_bytes(rows, columns=COLUMN_NAMES) -> bytes:
    return "".join(json.dumps({c: _val(r, c) if c in COLUMN_NAMES else r.get(c) for c in columns},
                              ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def parquet_table(rows, columns=COLUMN_NAMES):
    import datetime as dt

    import pyarrow as pa
    mine, other = (REGISTRY_COLUMNS, COLUMNS) if set(columns) <= set(REGISTRY_COLUMN_NAMES) else \
        (COLUMNS, REGISTRY_COLUMNS)
    decl = {c.name: c for c in (*other, *mine)}   # a name both tables have (id): this table's type
    arrays, fields = [], []
    for name in columns:
        c = decl[name]
        vals = [_val(r, name) if name in COLUMN_NAMES else r.get(name) for r in rows]
        if c.kind == "int":
            t = {64: pa.int64(), 32: pa.int32(), 8: pa.int8()}[c.bits]
        elif c.kind == "str":
            t = pa.string()
        else:
            t = pa.timestamp("s")
            vals = [None if v is None else dt.datetime.strptime(v, "%Y-%m-%d %H:%M:%S") for v in vals]
        arrays.append(pa.array(vals, t))
        fields.append(pa.field(name, t, nullable=c.nullable))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write_parquet(path: str, rows, columns=COLUMN_NAMES, *, row_group_size: int | None = None) -> None:
    import pyarrow.parquet as pq
    pq.write_table(parquet_table(rows, columns), path, row_group_size=row_group_size, compression="snappy")


# ---------------------------------------------------------------- mysqldump
_ESC = {"\x00": "\\0", "\n": "\\n", "\r": "\\r", "\\": "\\\\", "'": "\\'", '"': '\\"', "\x1a": "\\Z"}


def sql_literal(v) -> str:
    """A value as mysqldump writes it (mysql_real_escape_string)."""
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    s = str(v)
    return "'" + "".join(_ESC.get(ch, ch) for ch in s) + "'"


def dump_bytes(rows, registry=(), *, table: str = TABLE, per_statement: int = 100, trailer: bool = True,
               columns=COLUMN_NAMES) -> bytes:
    """A mysqldump-shaped file: header, CREATE TABLE from the declaration, extended INSERTs (``per_statement``
    rows each), the registry table, and mysqldump's ``-- Dump completed`` trailer."""
    decl = tuple(c for c in COLUMNS if c.name in columns)
    out = ["-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)", "--",
           "-- Host: 127.0.0.1    Database: orth_job", "-- ------------------------------------------------------",
           "", "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;", "/*!40101 SET NAMES utf8mb4 */;",
           ""]

    def table_block(name, cols, decl_cols, rs):
        out.extend(["--", f"-- Table structure for table `{name}`", "--", "",
                    f"DROP TABLE IF EXISTS `{name}`;", create_table_sql(name, decl_cols) + ";", "", "--",
                    f"-- Dumping data for table `{name}`", "--", "", f"LOCK TABLES `{name}` WRITE;"])
        for k in range(0, len(rs), per_statement):
            chunk = rs[k:k + per_statement]
            vals = ",".join("(" + ",".join(sql_literal(_val(r, c) if c in COLUMN_NAMES else r.get(c)) for c in cols)
                            + ")" for r in chunk)
            out.append(f"INSERT INTO `{name}` VALUES {vals};")
        out.extend(["UNLOCK TABLES;", ""])

    table_block(table, columns, decl, list(rows))
    if registry:
        table_block(REGISTRY_TABLE, REGISTRY_COLUMN_NAMES, REGISTRY_COLUMNS, list(registry))
    out.append("/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;")
    if trailer:
        out.append("")
        out.append("-- Dump completed on 2026-01-31  9:00:00")
    return ("\n".join(out) + "\n").encode("utf-8")


# ---------------------------------------------------------------- databases
def sqlite_create(conn: sqlite3.Connection) -> None:
    conn.execute(create_table_sql(TABLE, quote='"', mysql=False))
    conn.execute(create_table_sql(REGISTRY_TABLE, REGISTRY_COLUMNS, quote='"', mysql=False))


def write_sqlite(path: str, rows, registry=()) -> None:
    """A new SQLite database file holding the two tables."""
    if os.path.exists(path):
        raise FileExistsError(path)
    conn = sqlite3.connect(path)
    try:
        sqlite_create(conn)
        insert_rows(conn, rows, registry)
        conn.commit()
    finally:
        conn.close()


def insert_rows(conn, rows, registry=()) -> None:
    """INSERT the rows (and registry rows) through a DB-API connection (sqlite3 or PyMySQL)."""
    is_sqlite = isinstance(conn, sqlite3.Connection)
    ph = "?" if is_sqlite else "%s"
    q = '"' if is_sqlite else "`"
    cur = conn.cursor()
    try:
        cols = ", ".join(q + c + q for c in COLUMN_NAMES)
        cur.executemany(f"INSERT INTO {q}{TABLE}{q} ({cols}) VALUES ({', '.join([ph] * len(COLUMN_NAMES))})",
                        [tuple(_val(r, c) for c in COLUMN_NAMES) for r in rows])
        if registry:
            rc = ", ".join(q + c + q for c in REGISTRY_COLUMN_NAMES)
            cur.executemany(f"INSERT INTO {q}{REGISTRY_TABLE}{q} ({rc}) VALUES "
                            f"({', '.join([ph] * len(REGISTRY_COLUMN_NAMES))})",
                            [tuple(r.get(c) for c in REGISTRY_COLUMN_NAMES) for r in registry])
    finally:
        cur.close()


def mysql_create(conn) -> None:
    cur = conn.cursor()
    try:
        cur.execute(create_table_sql(TABLE))
        cur.execute(create_table_sql(REGISTRY_TABLE, REGISTRY_COLUMNS))
    finally:
        cur.close()


def write_file(path: str, data: bytes) -> None:
    """A new file (never overwrites), fsynced with its directory."""
    write_new(path, [data])
    fsync_dir(os.path.dirname(os.path.abspath(path)))

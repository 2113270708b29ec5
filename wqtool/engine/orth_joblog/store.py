"""The Orth admin's callback update rules (spec §7, ``JobCompleteHelper.callback``) over an orth_job_log table in
SQLite (a file) or MySQL / MariaDB (a URL): what ``serve --orth-admin`` stores.

Per item, in order: a missing row is dropped silently; a row whose handle_code is already > 0 ignores the item
("Duplicate callback"); else handle_msg = existing + "<br>" + new (either may be absent), handle_time = now,
handle_code = the item's (not validated: 0 and negative codes are stored as the admin stores them), handle_msg cut
to 15,000 Java chars. Registry beats (``registry`` / ``registryRemove``) upsert / delete orth_job_registry rows.
"""
from __future__ import annotations

import datetime as _dt
import os
import sqlite3
import threading
from dataclasses import dataclass

from ...errors import UsageError
from ...formats.orth_joblog import HANDLE_MSG_MAX_CHARS, REGISTRY_TABLE, TABLE
from . import dburl, writer


@dataclass
class Outcome:
    updated: int = 0
    duplicate: int = 0
    missing: int = 0


def cut_java(s: str, n: int = HANDLE_MSG_MAX_CHARS) -> str:
    """``s.substring(0, n)`` in Java (UTF-16 code units; a split surrogate pair keeps its high half, as Java)."""
    if len(s) <= n // 2:
        return s
    units = s.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * n:
        return s
    return units[:2 * n].decode("utf-16-le", "surrogatepass")


class CallbackStore:
    """A table to apply callbacks to. ``target``: a SQLite file path (created with both tables if missing) or a
    ``sqlite:///`` / ``mysql://`` / ``jdbc:mysql://`` / ``jdbc:mariadb://`` URL."""

    def __init__(self, target: str, *, timezone: str = "UTC"):
        from .replay import zone
        self.tz = zone(timezone)
        self.lock = threading.Lock()
        if dburl.is_db_url(target):
            u = dburl.parse(target)
            if u.kind == "sqlite":
                target = u.path
            else:
                self.kind = "mysql"
                self.label = dburl.redact(target)
                self.conn = dburl.connect(target)
                self.conn.autocommit(False)
                self.ph, self.q = "%s", "`"
                import pymysql.cursors
                self.conn.cursorclass = pymysql.cursors.Cursor
                return
        self.kind, self.label = "sqlite", target
        new = not os.path.exists(target)
        self.conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        if new:
            writer.sqlite_create(self.conn)
        self.ph, self.q = "?", '"'

    def now(self) -> str:
        return _dt.datetime.now(self.tz).strftime("%Y-%m-%d %H:%M:%S")

    def _exec(self, cur, sql: str, args=()):
        cur.execute(sql.replace("?", self.ph).replace('"', self.q), args)

    def apply(self, items: list[dict]) -> Outcome:
        """One request's items, in order, as the admin processes them."""
        out = Outcome()
        with self.lock:
            cur = self.conn.cursor()
            try:
                self._begin(cur)
                for it in items:
                    log_id, code, msg = it.get("logId"), it.get("handleCode", 0), it.get("handleMsg")
                    self._exec(cur, f'SELECT "handle_code", "handle_msg" FROM "{TABLE}" WHERE "id" = ?', (log_id,))
                    row = cur.fetchone()
                    if row is None:
                        out.missing += 1
                        continue
                    if row[0] > 0:
                        out.duplicate += 1
                        continue
                    text = (row[1] + "<br>" if row[1] is not None else "") + (msg if msg is not None else "")
                    self._exec(cur, f'UPDATE "{TABLE}" SET "handle_time" = ?, "handle_code" = ?, "handle_msg" = ? '
                               'WHERE "id" = ?', (self.now(), int(code), cut_java(text), log_id))
                    out.updated += 1
                self._commit(cur)
            except BaseException:
                self._rollback(cur)
                raise
            finally:
                cur.close()
        return out

    def registry(self, group: str, key: str, value: str, *, remove: bool = False) -> None:
        with self.lock:
            cur = self.conn.cursor()
            try:
                self._begin(cur)
                self._exec(cur, f'DELETE FROM "{REGISTRY_TABLE}" WHERE "registry_group" = ? AND "registry_key" = ? '
                           'AND "registry_value" = ?', (group, key, value))
                if not remove:
                    self._exec(cur, f'INSERT INTO "{REGISTRY_TABLE}" ("registry_group", "registry_key", '
                               '"registry_value", "update_time") VALUES (?, ?, ?, ?)', (group, key, value, self.now()))
                self._commit(cur)
            except BaseException:
                self._rollback(cur)
                raise
            finally:
                cur.close()

    def _begin(self, cur) -> None:
        if self.kind == "sqlite":
            cur.execute("BEGIN IMMEDIATE")

    def _commit(self, cur) -> None:
        if self.kind == "sqlite":
            cur.execute("COMMIT")
        else:
            self.conn.commit()

    def _rollback(self, cur) -> None:
        try:
            if self.kind == "sqlite":
                cur.execute("ROLLBACK")
            else:
                self.conn.rollback()
        except Exception:  # noqa: BLE001 — nothing open
            pass

    def close(self) -> None:
        self.conn.close()


def check_items(body) -> list[dict]:
    """The callback body: a JSON array of objects (Gson takes missing keys as 0 / null)."""
    if not isinstance(body, list) or not all(isinstance(x, dict) for x in body):
        raise UsageError("the callback body must be a JSON array of objects")
    out = []
    for x in body:
        lid, code = x.get("logId", 0), x.get("handleCode", 0)
        if not isinstance(lid, int) or not isinstance(code, int) or isinstance(lid, bool) or isinstance(code, bool):
            raise UsageError("logId and handleCode must be integers")
        msg = x.get("handleMsg")
        out.append({"logId": lid, "handleCode": code, "handleMsg": None if msg is None else str(msg)})
    return out

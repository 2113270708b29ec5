"""A private MariaDB for the tests: its own datadir, socket and free port on 127.0.0.1, bounded start time.

Needs Debian's mariadb-server (``.ci/run`` installs it); ``start()`` raises ``Unavailable`` with the reason when
the binaries are missing, so the tests skip with a clear message.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

JDBC_JAR = "/usr/share/java/mariadb-java-client.jar"
START_TIMEOUT_S = 60


class Unavailable(Exception):
    pass


def _binary(*names: str) -> str | None:
    for n in names:
        p = shutil.which(n) or (f"/usr/sbin/{n}" if os.path.exists(f"/usr/sbin/{n}") else None)
        if p:
            return p
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MariaDB:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="wqtool-mariadb-")
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> "MariaDB":
        server = _binary("mariadbd", "mysqld")
        install = _binary("mariadb-install-db", "mysql_install_db")
        if not server or not install:
            raise Unavailable("MariaDB is not installed (apt-get install mariadb-server libmariadb-java)")
        user = ["--user=root"] if os.geteuid() == 0 else []
        data = os.path.join(self.dir, "data")
        r = subprocess.run([install, "--no-defaults", f"--datadir={data}", "--auth-root-authentication-method=normal",
                            "--skip-test-db", *user], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Unavailable(f"mariadb-install-db failed: {r.stderr[-500:]}")
        self.sock = os.path.join(self.dir, "mysqld.sock")
        self.proc = subprocess.Popen([server, "--no-defaults", f"--datadir={data}", f"--socket={self.sock}",
                                      f"--port={self.port}", "--bind-address=127.0.0.1", "--skip-log-bin",
                                      "--innodb-buffer-pool-size=32M", f"--pid-file={self.dir}/pid",
                                      f"--log-error={self.dir}/error.log", *user],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        import pymysql
        while True:
            try:
                conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="",
                                       connect_timeout=2)
                conn.cursor().execute("CREATE DATABASE IF NOT EXISTS orth_job CHARACTER SET utf8mb4")
                conn.close()
                return self
            except pymysql.MySQLError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise Unavailable("mariadbd did not start in time") from None
                time.sleep(0.2)

    def url(self, scheme: str = "mysql", db: str = "orth_job") -> str:
        if scheme.startswith("jdbc"):
            return f"{scheme}://127.0.0.1:{self.port}/{db}?user=root&password="
        return f"{scheme}://root:@127.0.0.1:{self.port}/{db}"

    def connect(self, db: str = "orth_job"):
        import pymysql
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="", database=db,
                               charset="utf8mb4", autocommit=True, connect_timeout=5)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)

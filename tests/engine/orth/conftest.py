"""The Java oracle (real Gson 2.13.2 — the jar Spark ships, Orth's version — and real Java serialization), compiled
once per session from ``java/``; tests that need it skip with a clear message without javac or the jar."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def gson_jar() -> str | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "gson-2*.jar"))
    return jars[0] if jars else None


class Oracle:
    def __init__(self, classes: str, jar: str):
        self.cp = f"{classes}:{jar}"

    def run(self, cmd: str, files: list[str]) -> list[str]:
        r = subprocess.run(["java", "-cp", self.cp, "Oracle", cmd, *files], capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        return r.stdout.decode("utf-8").split("\n")[:-1]   # not splitlines(): U+0085, U+2028 are data


@pytest.fixture(scope="session")
def oracle(tmp_path_factory):
    jar = gson_jar()
    if shutil.which("javac") is None or shutil.which("java") is None or jar is None:
        pytest.skip("the Java oracle needs javac/java (JDK 17) and Spark's gson jar (pip install 'wqtool[spark]')")
    out = str(tmp_path_factory.mktemp("oracle"))
    srcs = [os.path.join(dp, n) for dp, _, ns in os.walk(os.path.join(HERE, "java")) for n in ns if n.endswith(".java")]
    r = subprocess.run(["javac", "-nowarn", "-cp", jar, "-d", out, *srcs], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return Oracle(out, jar)

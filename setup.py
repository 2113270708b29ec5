"""Only the optional C kernels live here; everything else is in pyproject.toml.

``wqtool.engine.workq._kernel`` (FastReplay._scan and the compact job table in C), ``wqtool.engine.workq._sha``
(SHA-256 whose running state moves between processes: libcrypto's),
``wqtool.engine.kestrel._kernel`` (the Kestrel fast path's loop) and ``wqtool.server.workq._proto`` (``wqtool serve``'s
request-line parser) are optional: where they do not build (no compiler, no Python headers, no __int128) the install
still succeeds and wqtool runs the pure-Python loops.

``wqtool-serve`` (wqtool/server/launch.c) is an executable, not an extension: workq-server's command line, the port
bound before Python starts, then ``wqtool serve``. ``build_ext`` builds it into build/launcher/ and pip installs it
beside the ``wqtool`` script (PREFIX/bin). Where it does not compile, a two-line shell script takes its place: the
same command line, the port bound once Python runs.

The data files are here, not in pyproject.toml: its globs are expanded before anything is built.
"""
import glob
import os
import stat

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from distutils.command.build_scripts import build_scripts   # (setuptools has no subclass of its own: its distutils)

LAUNCHER = os.path.join("build", "launcher", "wqtool-serve")
_FALLBACK = """#!/bin/sh
# wqtool-serve without a C compiler at install time: `wqtool serve`, which binds the port once Python runs
exec "$(dirname "$0")/wqtool" serve "$@"
"""


class BuildExt(build_ext):
    """The extensions, then ``LAUNCHER``: compiled and linked by the extensions' compiler, or the shell fallback."""

    def run(self):
        super().run()
        os.makedirs(os.path.dirname(LAUNCHER), exist_ok=True)
        try:
            objs = self.compiler.compile(["wqtool/server/launch.c"], output_dir=os.path.join("build", "launcher"),
                                         extra_postargs=["-O2"])
            self.compiler.link_executable(objs, "wqtool-serve", output_dir=os.path.dirname(LAUNCHER))
        except Exception as exc:  # noqa: BLE001 — any failure: the fallback
            self.warn(f"wqtool-serve: not compiled ({exc}); a shell script runs `wqtool serve` instead")
            with open(LAUNCHER, "w") as f:
                f.write(_FALLBACK)
        os.chmod(LAUNCHER, os.stat(LAUNCHER).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class BuildScripts(build_scripts):
    """The scripts; an executable among them (no ``#!``: the compiled wqtool-serve) copied as it is (distutils reads
    every script as text, to rewrite a ``#!python`` line, and fails on it)."""

    def run(self):
        def binary(path):
            with open(path, "rb") as f:
                return f.read(2) != b"#!"
        executables = [p for p in self.scripts if binary(p)]
        self.scripts = [p for p in self.scripts if p not in executables]
        super().run()
        self.mkpath(self.build_dir)
        for p in executables:
            self.copy_file(p, self.build_dir)

_SHARED = ["wqtool/engine/_cgrow.h", "wqtool/engine/_series.h"]      # included by both kernels
#: the workq kernel is one translation unit: _kernel.c includes its parts by job (crc, scan, job table, row
#: encoders, digest) and the constants header generated from wqtool/formats/ (scripts/gen_kernel_header.py)
_WORKQ_PARTS = sorted(glob.glob("wqtool/engine/workq/kernel/*.[ch]"))

setup(ext_modules=[Extension("wqtool.engine.workq._kernel", ["wqtool/engine/workq/_kernel.c"], optional=True,
                             depends=_SHARED + _WORKQ_PARTS, extra_compile_args=["-O3"]),
                   # SHA-256 with a portable running state (a log's digest hashed share after share): libcrypto
                   Extension("wqtool.engine.workq._sha", ["wqtool/engine/workq/_sha.c"], optional=True,
                             libraries=["crypto"], extra_compile_args=["-O2"]),
                   Extension("wqtool.engine.kestrel._kernel", ["wqtool/engine/kestrel/_kernel.c"], optional=True,
                             depends=_SHARED + ["wqtool/engine/kestrel/consts.h"], extra_compile_args=["-O3"]),
                   Extension("wqtool.server.workq._proto", ["wqtool/server/workq/_proto.c"], optional=True,
                             depends=["wqtool/engine/workq/kernel/consts.h", "wqtool/engine/workq/kernel/crc.c",
                                      "wqtool/server/workq/_core.c"],
                             extra_compile_args=["-O3"])],
      cmdclass={"build_ext": BuildExt, "build_scripts": BuildScripts},
      # `pip install` puts the man pages where man(1) looks next to the script's bin/ (PREFIX/share/man): after
      # installing, `man wqtool`, `man wqtool-verify` and `man 5 wqtool-formats` work (tests/test_install.py)
      scripts=["bin/wqtool", LAUNCHER],
      data_files=[("share/man/man1", sorted(glob.glob("man/*.1"))),
                  ("share/man/man5", sorted(glob.glob("man/*.5")))])

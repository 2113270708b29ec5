"""Only the optional C kernels live here; everything else is in pyproject.toml.

``wqtool.engine.workq._kernel`` (FastReplay._scan and the compact job table in C), ``wqtool.engine.workq._sha``
(SHA-256 whose running state moves between processes: libcrypto's),
``wqtool.engine.kestrel._kernel`` (the Kestrel fast path's loop) and ``wqtool.server.workq._proto`` (``wqtool serve``'s
request-line parser) are optional: where they do not build (no compiler, no Python headers, no __int128) the install
still succeeds and wqtool runs the pure-Python loops.
"""
import glob

from setuptools import Extension, setup

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
                             extra_compile_args=["-O3"])])

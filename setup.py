"""Only the optional C kernel lives here; everything else is in pyproject.toml.

``wqtool.engine.workq._kernel`` (FastReplay._scan in C) is optional: where it does not build (no compiler, no
Python headers, no __int128) the install still succeeds and wqtool runs the pure-Python loop.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("wqtool.engine.workq._kernel", ["wqtool/engine/workq/_kernel.c"], optional=True,
                             extra_compile_args=["-O3"])])

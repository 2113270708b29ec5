"""Only the optional C kernel lives here; everything else is in pyproject.toml.

``wqtool.engine._kernel`` (FastReplay._scan in C) is optional: where it does not build (no compiler, no
Python headers, no __int128) the install still succeeds and wqtool runs the pure-Python loop.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("wqtool.engine._kernel", ["wqtool/engine/_kernel.c"], optional=True,
                             extra_compile_args=["-O3"])])

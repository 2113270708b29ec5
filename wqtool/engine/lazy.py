"""Names imported on first use, so that the registry can load every format's ``format`` module (detection, codes,
``--format`` choices) without importing its readers, replay, plans and kernels: a command pays only for the format
it runs. ``import wqtool.cli`` went from 0.10 s to 0.38 s when every format's engine was imported eagerly.

``lazy("wqtool.engine.kestrel.pack", "pack_plan")`` stands for the function or class (call it, or read its
attributes), ``lazy("wqtool.engine.workq.verify")`` for the module; ``LazyInstance(module, "Name")`` is a class attribute holding ``Name()``, made on first access.
A name that isinstance/identity checks need must be imported for real (the ``model`` modules are light)."""
from __future__ import annotations

import importlib
from typing import Any


class lazy:        # noqa: N801 — used like the name it stands for
    __slots__ = ("_module", "_name", "_obj")

    def __init__(self, module: str, name: str | None = None):
        self._module, self._name, self._obj = module, name, None

    def _load(self) -> Any:
        obj = self._obj
        if obj is None:
            obj = importlib.import_module(self._module)
            if self._name is not None:
                obj = getattr(obj, self._name)
            self._obj = obj
        return obj

    def __call__(self, *args, **kwargs):
        return self._load()(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._load(), attr)

    def __repr__(self) -> str:
        return f"<lazy {self._module}{'' if self._name is None else ':' + self._name}>"


class LazyInstance:
    """A class attribute ``Name()`` made (and stored on the class in its place) on first access."""

    def __init__(self, module: str, name: str):
        self._module, self._name, self._attr = module, name, None

    def __set_name__(self, owner, attr: str) -> None:
        self._attr = attr

    def __get__(self, obj, owner=None):
        value = getattr(importlib.import_module(self._module), self._name)()
        setattr(owner if owner is not None else type(obj), self._attr, value)
        return value

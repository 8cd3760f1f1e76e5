"""Old module paths that still import: ``from netsim.topology import ring`` is ``netsim.network.topology``.

The package was once one flat folder. Its modules now live in packages that follow
the data's way (see ``netsim/__init__.py``); code written against the old paths keeps
working, because importing an old path gives the module that lives at the new one
(the same object, not a copy). ``netsim.stats``, ``netsim.animate`` and
``netsim.sweep`` are functions now (``netsim.stats(result)``): their modules are
:mod:`netsim.analysis.stats`, :mod:`netsim.teaching.animate` and
:mod:`netsim.studies.sweep`.

Examples
--------
>>> import netsim
>>> from netsim.topology import ring
>>> ring is netsim.network.topology.ring
True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "install"]

MOVED = {
    "netsim.units": "netsim.network.units",
    "netsim.topology": "netsim.network.topology",
    "netsim.presets": "netsim.network.presets",
    "netsim.device_mesh": "netsim.network.device_mesh",
    "netsim.chunks": "netsim.semantics.chunks",
    "netsim.schedules": "netsim.algorithms",
    "netsim.bundles": "netsim.algorithms.bundles",
    "netsim.invariants": "netsim.checks",
    "netsim.resources": "netsim.checks.memory",
    "netsim.costs": "netsim.analysis.closed_forms",
    "netsim.critical_path": "netsim.analysis.critical_path",
    "netsim.replay": "netsim.teaching.replay",
    "netsim.study": "netsim.scenario.study",
    "netsim.plots": "netsim.studies.plots",
    "netsim.explain": "netsim.teaching.explain",
    "netsim.frames": "netsim.teaching.frames",
    "netsim.timeline": "netsim.teaching.timeline",
    "netsim.layout_2d": "netsim.teaching.layout_2d",
    "netsim.player": "netsim.teaching.player",
    "netsim.report": "netsim.cli.report",
    "netsim.trace": "netsim.cli.trace",
    "netsim.output": "netsim.cli.output",
}
"""Old module path -> where the module lives now."""


class _Loader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target
        self.own_spec: Any = None

    def create_module(self, spec: Any) -> ModuleType:
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new path is already loaded; it keeps its own spec."""
        module.__spec__ = self.own_spec


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, _Loader(MOVED[fullname]))


def install() -> None:
    """Let the old module paths import (once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())

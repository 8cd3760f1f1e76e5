"""Write a compiled JAX program's HLO text and its device map, for ``netsim program --hlo``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netsim.destinations import staged_file
from netsim.programs.hlo.devices import sidecar_path

__all__ = ["compiler_of", "device_map", "export"]


def device_map(mesh: Any) -> dict[str, Any]:
    """The device map of a ``jax.sharding.Mesh``: per device id (position in ``mesh.devices.flat``), its chip.

    TPU devices (real, or abstract ones from ``jax.experimental.topologies``) have
    ``coords`` and ``core_on_chip``; devices without them (CPU) get ``null`` coordinates.
    """
    devices = []
    for index, device in enumerate(mesh.devices.flat):
        coords = getattr(device, "coords", None)
        devices.append(
            {
                "id": index,
                "coords": [int(c) for c in coords] if coords is not None else None,
                "core_on_chip": int(getattr(device, "core_on_chip", 0) or 0),
                "platform": str(getattr(device, "platform", "unknown")),
            }
        )
    return {"devices": devices, "mesh": {str(name): int(size) for name, size in mesh.shape.items()}}


def compiler_of(mesh: Any) -> dict[str, str]:
    """What compiles for ``mesh``: the TPU compiler (libtpu's and JAX's versions, the chips' kind and extent) or XLA's CPU compiler.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> import numpy as np
    >>> chip = SimpleNamespace(platform="tpu", coords=(3, 3, 0), device_kind="TPU v5 lite")
    >>> compiler_of(SimpleNamespace(devices=np.array([chip])))["topology"]
    'TPU v5 lite 4x4x1'
    """
    import importlib.metadata

    def version(package: str) -> str:
        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    devices = list(mesh.devices.flat)
    platforms = {str(getattr(d, "platform", "unknown")) for d in devices}
    platform = platforms.pop() if len(platforms) == 1 else "mixed"
    facts = {"platform": platform, "jax": version("jax")}
    if platform == "tpu":
        coords = [tuple(int(c) for c in d.coords) for d in devices if getattr(d, "coords", None) is not None]
        extent = "x".join(str(max(c[i] for c in coords) + 1) for i in range(len(coords[0]))) if coords else "?"
        facts.update({"libtpu": version("libtpu"), "topology": f"{getattr(devices[0], 'device_kind', 'TPU')} {extent}"})
    return facts


def _write(path: Path, text: str) -> None:
    with staged_file(path) as staged:  # whole or not at all; a symbolic link is followed
        staged.write_text(text, encoding="utf-8")


def export(compiled: Any, mesh: Any, path: str | Path) -> Path:
    """Write ``compiled.as_text()`` to ``path`` and its device map to ``NAME.devices.json`` beside it.

    The device map says what compiled the module (:func:`compiler_of`): the report's
    "compiled by" row reads it.

    Parameters
    ----------
    compiled : jax.stages.Compiled
        ``jax.jit(f, ...).lower(*args).compile()``.
    mesh : jax.sharding.Mesh
        The mesh ``f`` was compiled for: module device ``i`` is ``mesh.devices.flat[i]``.
    path : str or Path
        The HLO text file to write.

    Returns
    -------
    Path
        The device map's path.

    Examples
    --------
    >>> from netsim.programs.hlo.export import export  # doctest: +SKIP
    >>> export(jax.jit(step).lower(x).compile(), mesh, "step.txt")  # doctest: +SKIP
    PosixPath('step.devices.json')
    """
    path = Path(path)
    if path.suffix == ".json":
        raise ValueError(f"{path}: the HLO text is written there; give a name such as step.txt")
    data = device_map(mesh)
    rows = ",\n".join("  " + json.dumps(entry) for entry in data["devices"])
    devices = f'{{"devices": [\n{rows}\n ],\n "mesh": {json.dumps(data["mesh"])},\n "compiler": {json.dumps(compiler_of(mesh))}}}\n'
    sidecar = sidecar_path(path)
    _write(path, compiled.as_text())
    _write(sidecar, devices)
    return sidecar

"""The files a run reads: a scenario, program or study file and every file it names.

An output must never land on one of them (``netsim program --hlo m.txt --trace m.txt``
would replace the module it reads), and a resumed sweep keeps a row only while the
files its point read are unchanged (:func:`files_digest`).

A run file names other files by these fields: ``topology`` (a topology file, by path
or bundled name), ``hlo`` (a compiled module's text, whose device map is
``NAME.devices.json`` beside it) and, in a study, ``base`` (the scenario or program the
points start from).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from netsim.scenario.topology_spec import find_topology
from netsim.scenario.yaml_files import read_yaml

__all__ = ["device_map_beside", "files_digest", "files_named", "files_read"]


def device_map_beside(module: str | Path) -> Path:
    """The device map read with the module at ``module``: ``NAME.devices.json`` beside it.

    Examples
    --------
    >>> str(device_map_beside("runs/step.txt"))
    'runs/step.devices.json'
    """
    path = Path(module)
    return path.with_name(path.stem + ".devices.json")


def _relative(name: str, base_dir: Path | None) -> Path:
    path = Path(name)
    return path if path.is_absolute() or base_dir is None else base_dir / path


def files_named(data: Any, base_dir: Path | None) -> list[Path]:
    """The files a run's mapping names (its topology file, its HLO module and device map), whether they exist or not.

    A topology that names no file (a TPU slice such as ``tpu-v5e:4x4``, or a mapping)
    adds nothing.

    Examples
    --------
    >>> [p.name for p in files_named({"topology": "ring8", "hlo": "m.txt"}, Path("runs"))]
    ['ring8.yaml', 'm.txt', 'm.devices.json']
    """
    if not isinstance(data, dict):
        return []
    files: list[Path] = []
    topology = data.get("topology")
    if isinstance(topology, str) and topology.strip():
        with contextlib.suppress(FileNotFoundError):
            files.append(find_topology(topology, base_dir))
    module = data.get("hlo")
    if isinstance(module, str) and module.strip():
        with contextlib.suppress(OSError, ValueError):
            path = _relative(module, base_dir)
            files += [path, device_map_beside(path)]
    return files


def files_read(path: str | Path | None, hlo: str | Path | None = None) -> list[Path]:
    """Every file a run of ``path`` (or of the module ``hlo``) reads: the file, the files it names and, for a study, its base's.

    A file that cannot be read as YAML names nothing (reading it for the run then says why).

    Examples
    --------
    >>> [p.name for p in files_read("scenarios/studies/ring_algorithms.yaml")]  # its base is inline and names topologies/ring8.yaml
    ['ring_algorithms.yaml', 'ring8.yaml']
    >>> [p.name for p in files_read(None, hlo="m.txt")]
    ['m.txt', 'm.devices.json']
    """
    files: list[Path] = []
    if hlo is not None and str(hlo) != "":
        files += [Path(hlo), device_map_beside(hlo)]
    if path is None or str(path) == "":
        return files
    path = Path(path)
    files.append(path)
    try:
        data = read_yaml(path)
    except (OSError, ValueError):
        return files
    files += files_named(data, path.parent)
    base = data.get("base") if isinstance(data, dict) else None
    if isinstance(base, str) and base.strip():
        with contextlib.suppress(OSError, ValueError):
            files += files_read(_relative(base, path.parent))
    elif isinstance(base, dict):
        files += files_named(base, path.parent)
    return files


def files_digest(files: Iterable[Path]) -> str:
    """A hash of what ``files`` hold now (a missing file counts as missing), as hex: it changes when one is edited, created or removed.

    Examples
    --------
    >>> files_digest([Path("no-such-file.yaml")]) == files_digest([Path("no-such-file.yaml")]) != files_digest([Path("scenarios/allgather_ring8.yaml")])
    True
    """
    digest = hashlib.sha256()
    for file in files:  # contents only: the same files reached from another folder hash alike
        try:
            digest.update(hashlib.sha256(file.read_bytes()).digest())
        except (OSError, ValueError):
            digest.update(b"missing")
    return digest.hexdigest()

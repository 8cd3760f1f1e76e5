"""Write a run's files: ``--output DIR`` and ``--trace FILE``, all or nothing.

Destinations are checked before anything is simulated (:mod:`netsim.destinations`), and
files are written to a folder beside their destination and moved into it only when all
of them are complete, so a user error or a failure never leaves partial output.

An output directory holds:

``result.json``
    the netsim version, the seed, the scenario as it was run (self-contained: defaults
    filled in, the topology inline) and everything ``netsim run --json`` prints;
``links.csv``, ``devices.csv``
    per-link and per-device statistics (:func:`netsim.cli.report.links_csv`, ``devices_csv``);
``scenario.yaml``
    the scenario as it was run, which ``netsim run`` reproduces bit for bit;
``.netsim-files``
    the names of the files netsim wrote there: ``--force`` replaces a folder holding only
    those, and refuses one holding anything else (:mod:`netsim.written`).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import yaml

from netsim.cli.report import devices_csv, links_csv, to_dict
from netsim.destinations import StagedFolder, all_or_nothing, check_folder
from netsim.result import Result

__all__ = ["OUTPUT_FILES", "fill_folder", "output_contents", "result_record", "run_inputs", "write_output_dir"]

OUTPUT_FILES = ("result.json", "links.csv", "devices.csv", "scenario.yaml")


def result_record(result: Result, scenario: Any) -> dict[str, Any]:
    """What ``result.json`` holds: version, seed, the scenario as run, and the full result.

    Examples
    --------
    >>> import netsim
    >>> scenario = netsim.load_scenario("scenarios/allgather_ring8.yaml")
    >>> record = result_record(netsim.simulate(scenario), scenario)
    >>> record["netsim_version"] == netsim.__version__, record["seed"], record["scenario_as_run"]["topology"]["dims"]
    (True, 0, [8])
    """
    from netsim.version import __version__

    return {
        "netsim_version": __version__,
        "seed": scenario.seed,
        "scenario_file": scenario.source,
        "scenario_as_run": scenario.as_run(),
        **to_dict(result),
    }


def output_contents(result: Result, scenario: Any) -> dict[str, str]:
    """The files of an output folder, by name: ``result.json``, ``links.csv``, ``devices.csv``, ``scenario.yaml``.

    Examples
    --------
    >>> import netsim
    >>> scenario = netsim.load_scenario("scenarios/allgather_ring8.yaml")
    >>> sorted(output_contents(netsim.simulate(scenario), scenario))
    ['devices.csv', 'links.csv', 'result.json', 'scenario.yaml']
    """
    return {
        "result.json": json.dumps(result_record(result, scenario), indent=2, allow_nan=False) + "\n",
        "links.csv": links_csv(result),
        "devices.csv": devices_csv(result),
        "scenario.yaml": yaml.safe_dump(scenario.as_run(), sort_keys=False, allow_unicode=True),
    }


def write_output_dir(directory: str | Path, result: Result, scenario: Any, *, force: bool = False) -> Path:
    """Write a run's files into the folder ``directory``, whole: a new folder, or (``force``) in place of an old one holding only what netsim wrote.

    The files are written into a folder beside it, which is then renamed into place
    (swapped with the existing folder, which is removed); a failure leaves nothing.

    Examples
    --------
    >>> import tempfile, pathlib, netsim
    >>> scenario = netsim.load_scenario("scenarios/allgather_ring8.yaml")
    >>> out = write_output_dir(pathlib.Path(tempfile.mkdtemp()) / "run", netsim.simulate(scenario), scenario)
    >>> sorted(p.name for p in out.iterdir())
    ['.netsim-files', 'devices.csv', 'links.csv', 'result.json', 'scenario.yaml']
    """
    path = check_folder("--output", directory, force, inputs=run_inputs(scenario))
    staged = StagedFolder(path)
    with all_or_nothing(staged):
        fill_folder(staged, output_contents(result, scenario))
    return path


def fill_folder(staged: StagedFolder, contents: dict[str, str]) -> None:
    """Write ``contents`` (file name -> text) into a staged folder."""
    for name, text in contents.items():
        (staged.path / name).write_text(text, encoding="utf-8")


def run_inputs(scenario: Any) -> list[Path]:
    """The files a scenario run reads: the scenario file and the files it names, and its topology file, if any (outputs must spare them)."""
    from netsim.scenario.inputs import files_read
    from netsim.scenario.topology_spec import find_topology

    files = files_read(scenario.source) if getattr(scenario, "source", None) and Path(scenario.source).is_file() else []
    if isinstance(getattr(scenario, "topology", None), str):
        with contextlib.suppress(FileNotFoundError):
            files.append(find_topology(scenario.topology, scenario.base_dir))
    return files

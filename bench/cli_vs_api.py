"""The command line beside the API at scale: `netsim run`, `run --json` and `explain` against `netsim.simulate`, each a fresh process.

    python bench/cli_vs_api.py                          # ring1024 and pod, every mode, 3 rounds
    python bench/cli_vs_api.py --case ring1024 --rounds 5
    python bench/cli_vs_api.py --checkout ../other      # another checkout's netsim

Each figure is one fresh ``python -I`` process (isolated: no PYTHONPATH, no user site)
that puts the checkout first on ``sys.path``, checks that ``netsim.__file__`` is the
checkout's, and then either calls the API (``netsim.simulate(netsim.load_scenario(f))``:
the simulation, its checks and its Result, nothing printed) or runs the command line
(``netsim.cli.main.main()`` with the command's arguments, its output thrown away).
A first API run warms numba's cache and the OS's file cache and is not counted.
Rounds interleave the modes (api, run, json, explain, api, ...) because the shared
machine's speed drifts; the figures are the child's CPU seconds (user + system, from
``getrusage``: steadier than wall time when other work runs beside) and its wall
seconds, every run listed, then per mode the median and its ratio to the API's median.
The goal is a ratio of at most 1.3: what the command adds to the run (statistics,
explanations, printing, the CLI's imports) should cost less than a third of the run.

Cases: ``ring1024``, an all_gather of 64 KiB per device on a ring of 1024 (2.1 M
transfers, random float32 values: the output stays lazy), and ``pod``,
scenarios/pod/allgather_tpu_v4_pod.yaml (4096 chips, timing only).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RING1024 = """\
name: allgather_ring1024
description: all_gather of 64 KiB per device on a ring of 1024, lazy output
topology: {kind: ring, dims: [1024], link: {bandwidth: 45 GB/s, latency: 1 us}}
collective: {op: all_gather}
input: {shape: [16384], dtype: float32}
algorithm: bidirectional_ring
seed: 0
"""

CHILD = """\
import sys
checkout, mode, scenario = sys.argv[1:4]
sys.path.insert(0, checkout)
import netsim
assert netsim.__file__.startswith(checkout + "/"), (netsim.__file__, checkout)
if mode == "api":
    netsim.simulate(netsim.load_scenario(scenario))
else:
    from netsim.cli.main import main
    sys.argv = ["netsim", *{"run": ["run"], "json": ["run", "--json"], "explain": ["explain"]}[mode], scenario]
    main()
"""

MODES = ("api", "run", "json", "explain")
CASES = ("ring1024", "pod")


def scenario_path(case: str, folder: str) -> str:
    if case == "ring1024":
        path = Path(folder) / "allgather_ring1024.yaml"
        path.write_text(RING1024)
        return str(path)
    return str(ROOT / "scenarios/pod/allgather_tpu_v4_pod.yaml")


def measured(checkout: str, mode: str, scenario: str) -> tuple[float, float]:
    """(CPU s, wall s) of one fresh process running ``mode`` on ``scenario``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-c", CHILD, checkout, mode, scenario], check=True, stdout=subprocess.DEVNULL, cwd=checkout)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", default=str(ROOT), help="the netsim checkout to measure (default: this one)")
    parser.add_argument("--case", action="append", choices=CASES, help="cases to run (default: both)")
    parser.add_argument("--mode", action="append", choices=MODES, help="modes to run besides api (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every mode")
    args = parser.parse_args()
    checkout = str(Path(args.checkout).resolve())
    modes = ["api", *[m for m in MODES[1:] if not args.mode or m in args.mode]]
    print(f"{os.uname().nodename}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, {checkout}")
    with tempfile.TemporaryDirectory() as folder:
        for case in args.case or CASES:
            scenario = scenario_path(case, folder)
            cpu: dict[str, list[float]] = {m: [] for m in modes}
            seconds, wall = measured(checkout, "api", scenario)  # numba's cache and the OS's, warmed: not counted
            print(f"  {case:9} warm-up  api      {seconds:7.2f} s CPU {wall:7.2f} s wall (not counted)", flush=True)
            for round_ in range(args.rounds):
                for mode in modes:
                    seconds, wall = measured(checkout, mode, scenario)
                    cpu[mode].append(seconds)
                    print(f"  {case:9} round {round_ + 1} {mode:8} {seconds:7.2f} s CPU {wall:7.2f} s wall  load {os.getloadavg()[0]:.2f}", flush=True)
            api = statistics.median(cpu["api"])
            for mode in modes:
                median = statistics.median(cpu[mode])
                print(f"{case:9} {mode:8} median {median:7.2f} s CPU  {median / api:5.2f}x the API", flush=True)


if __name__ == "__main__":
    main()

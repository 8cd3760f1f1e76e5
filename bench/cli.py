"""Start-up: what a user waits for before netsim answers, each figure a whole process beside its baseline.

    python bench/cli.py                 # 5 rounds after a warm-up round, about a minute
    python bench/cli.py --repeat 9      # steadier medians on a busy machine

Every figure is a fresh ``python -I`` process (no PYTHON* variables, no user site;
bytecode caches written and read as an installed package has them), timed from its
spawn to its exit, its CPU (user + system) from the kernel's accounting of the
finished child. The cases take turns, round after round, so that a drift of the
machine's speed hits them alike; the warm-up round is not counted (it also fills the
bytecode caches, and numba's if a checkout has just changed a compiled loop).

* ``import numpy`` and ``import numpy, networkx``: the baselines.
* ``netsim --version`` and ``netsim run scenarios/allgather_ring8.yaml``: the
  ``netsim`` console script's own lines (``from netsim.cli import main;
  sys.exit(main())``), with this checkout first on ``sys.path``.
* a 1024-device ring all_gather through the API (64 MiB of random bytes, lazy
  output, as bench/run.py): *fresh* is the process from its spawn to the first
  call's return, less the making of the input (timed in the child and taken off:
  it is NumPy's, not netsim's); *warm* is the same call again in that process.

Each child checks that ``netsim.__file__`` is this checkout's. Targets: ``--version``
at most 1.5x ``import numpy``; the ring8 run at most 2.5x ``import numpy, networkx``;
the fresh 1024-ring at most 1.6x the warm call (the verdict reads the ratio of the
wall medians; the ratio of the fastest runs and of the CPU medians are printed beside
it: on a shared machine CPU seconds are the steadier figure).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHECKED = f"""import sys, os
sys.path.insert(0, {str(ROOT)!r})
import netsim
assert os.path.realpath(netsim.__file__).startswith({str(ROOT) + os.sep!r}), netsim.__file__
"""

SCRIPT = CHECKED + "sys.argv[0] = 'netsim'\nfrom netsim.cli import main\nsys.exit(main())\n"
"""What the ``netsim`` console script runs (its entry point is ``netsim.cli:main``)."""

RING1024 = (
    CHECKED
    + """import json, time
import numpy as np
made, made_cpu = time.monotonic(), time.process_time()
x = np.random.default_rng(0).integers(0, 256, 64 << 20, dtype=np.uint8).reshape(1024, -1)
made, made_cpu = time.monotonic() - made, time.process_time() - made_cpu
topology = netsim.ring(1024, 45e9, 1e-6)
result = netsim.all_gather(x, topology=topology, output="lazy")
first = time.monotonic()
assert result.verified
time_s = result.time
result = None
warm, warm_cpu = time.monotonic(), time.process_time()
result = netsim.all_gather(x, topology=topology, output="lazy")
warm, warm_cpu = time.monotonic() - warm, time.process_time() - warm_cpu
assert result.time == time_s
first_cpu = time.process_time() - made_cpu - warm_cpu  # the process's CPU up to the first call's return, less the input's
print(json.dumps({"first_end": first, "input_s": made, "warm_s": warm, "first_cpu": first_cpu, "warm_cpu": warm_cpu}))
"""
)

API = "ring 1024 via the API"
CASES = {
    "import numpy": ["-c", "import numpy"],
    "import numpy, networkx": ["-c", "import numpy, networkx"],
    "netsim --version": ["-c", SCRIPT, "--version"],
    "netsim run ring8": ["-c", SCRIPT, "run", "scenarios/allgather_ring8.yaml"],
    API: ["-c", RING1024],
}

TARGETS = (
    ("netsim --version", "import numpy", 1.5),
    ("netsim run ring8", "import numpy, networkx", 2.5),
    ("ring 1024, fresh", "ring 1024, warm", 1.6),
)


def run_once(args: list[str], timeout: float) -> dict[str, float]:
    """One fresh ``python -I`` process: its wall and CPU seconds, and what the 1024-ring child reported."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        child = subprocess.Popen([sys.executable, "-I", *args], cwd=ROOT, stdout=out, stderr=err)
        signal.signal(signal.SIGALRM, lambda *_: child.kill())
        signal.alarm(math.ceil(timeout))
        _, status, usage = os.wait4(child.pid, 0)  # its CPU, from the kernel's accounting
        wall = time.monotonic() - start
        signal.alarm(0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if child.returncode:
        raise SystemExit(f"exit {child.returncode}: python -I {' '.join(args)[:80]}\n{stderr.strip()}")
    figures = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime}
    if args == CASES[API]:
        report = json.loads(stdout.strip().splitlines()[-1])
        figures["fresh"] = report["first_end"] - start - report["input_s"]
        figures["warm"] = report["warm_s"]
        figures["input"] = report["input_s"]
        figures["fresh_cpu"], figures["warm_cpu"] = report["first_cpu"], report["warm_cpu"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="counted rounds (default 5), after one warm-up round")
    parser.add_argument("--timeout", type=float, default=300, help="seconds before a process is stopped")
    args = parser.parse_args()
    print(f"{os.uname().nodename}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, {ROOT}, load {os.getloadavg()[0]:.2f}")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in CASES}
    for round_ in range(args.repeat + 1):
        for name, case in CASES.items():
            figures = run_once(case, args.timeout)
            if round_:
                runs[name].append(figures)
        print(f"round {round_}{' (warm-up, not counted)' if not round_ else ''}: load {os.getloadavg()[0]:.2f}", flush=True)
    rows = {name: [f["wall"] for f in figures] for name, figures in runs.items()}
    cpu = {name: [f.get("cpu", float("nan")) for f in figures] for name, figures in runs.items()}
    ring = runs[API]
    rows["ring 1024, fresh"] = [f["fresh"] for f in ring]
    rows["ring 1024, warm"] = [f["warm"] for f in ring]
    cpu["ring 1024, fresh"] = [f["fresh_cpu"] for f in ring]
    cpu["ring 1024, warm"] = [f["warm_cpu"] for f in ring]
    print(f"\n{'case':<24} {'wall min':>9} {'median':>7} {'max':>7}   {'CPU median':>10}")
    for name, walls in rows.items():
        cpus = cpu.get(name)
        cpu_text = f"{statistics.median(cpus):>10.3f}" if cpus else f"{'':>10}"
        print(f"{name:<24} {min(walls):>9.3f} {statistics.median(walls):>7.3f} {max(walls):>7.3f}   {cpu_text}")
    inputs = [f["input"] for f in ring]
    print(f"(the 1024-ring process's input, taken off its fresh figure: median {statistics.median(inputs):.3f} s)")
    print(f"\n{'target':<50} {'median ratio':>12} {'fastest':>8} {'CPU':>7}")
    failed = 0
    for name, base, limit in TARGETS:
        ratio = statistics.median(rows[name]) / statistics.median(rows[base])
        fastest = min(rows[name]) / min(rows[base])
        by_cpu = statistics.median(cpu[name]) / statistics.median(cpu[base])
        verdict = "PASS" if ratio <= limit else "FAIL"
        failed += verdict == "FAIL"
        print(f"{name + ' <= ' + format(limit, 'g') + 'x ' + base:<50} {ratio:>11.2f}x {fastest:>7.2f}x {by_cpu:>6.2f}x  {verdict}")
    print(f"load {os.getloadavg()[0]:.2f}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

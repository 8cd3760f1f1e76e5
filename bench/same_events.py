"""Two checkouts, the same events: every bundled file's ``--json`` from each, compared exactly.

    python bench/same_events.py --base /path/to/other/checkout          # this checkout against that one
    python bench/same_events.py --base ../netsim-old --big               # and the big programs (about 5 minutes more)
    python bench/same_events.py --base ../netsim-old --only ring256      # files whose path holds a word

For every scenario (``scenarios/*.yaml``, ``scenarios/pod``, ``scenarios/validation``)
and program file (``scenarios/programs``, its HLO modules included), and a few cases
written here that play on the compiled loop (a 128-ring all_gather with a link at 10 %
and late devices; an all_to_all on an 8x8 torus with a link down; FSDP programs on
tpu-v4 4x4x4 and 4x4x8, and with ``--big`` 8 layers on tpu-v4:8x8x8 and tpu-v5e:16x16),
each checkout runs the file in a fresh ``python -I`` process that puts the checkout
first on its path and checks ``netsim.__file__``, and prints what ``netsim run FILE
--json`` (or ``netsim program FILE --json``) prints, twice: as the command line plays
it, then with every run of 1 transfer or more sent to the compiled loop (where it can
play it: ``MIN_TRANSFERS`` set to 1, and ``auto`` choosing it at
any size). The refusal of runs the memory estimate finds
too big is turned off in both (the machine is shared; it changes no number). The two
checkouts' JSON objects must be equal, every float bit for bit; the script prints each
file's verdict and the first differing fields, and exits 1 if any differ.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

CHILD = r"""
import contextlib, io, json, os, sys
checkout, command, path = sys.argv[1:4]
sys.path.insert(0, checkout)
os.chdir(checkout)
import netsim
where = os.path.realpath(netsim.__file__)
assert where.startswith(os.path.realpath(checkout) + os.sep), f"netsim imported from {where}, not from {checkout}"
import netsim.checks.memory as memory
memory.available_memory = lambda: None  # (no refusal on a shared machine: it changes no number)
import netsim.engine.compiled as compiled
import netsim.run as running
from netsim.cli import main
out = {}
for mode in ("auto", "compiled"):
    if mode == "compiled":
        compiled.MIN_TRANSFERS = 1
        running.AUTO_PROCESSES_MAX_TRANSFERS = 0
    sys.argv = ["netsim", command, path, "--json"]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        try:
            code = main()
        except SystemExit as stop:
            code = stop.code
    out[mode] = {"exit": code, "json": json.loads(buffer.getvalue()) if buffer.getvalue().strip().startswith("{") else buffer.getvalue()}
print("SAME-EVENTS " + json.dumps(out))
"""


def bundled() -> list[tuple[str, Path]]:
    """The bundled files: (command, path relative to a checkout)."""
    scenarios = sorted(ROOT.glob("scenarios/*.yaml")) + sorted(ROOT.glob("scenarios/pod/*.yaml")) + sorted(ROOT.glob("scenarios/validation/*.yaml"))
    programs = sorted(ROOT.glob("scenarios/programs/*.yaml")) + sorted(ROOT.glob("scenarios/programs/hlo/**/*.yaml"))
    return [("run", p.relative_to(ROOT)) for p in scenarios] + [("program", p.relative_to(ROOT)) for p in programs]


def written(folder: Path, big: bool) -> list[tuple[str, Path]]:
    """Cases written here, sized for the compiled loop: contention, a link at 10 % and late devices, a link down, programs."""
    from programs import fsdp_program, write_program

    ring = {
        "name": "ring128_degraded_late",
        "topology": {"name": "ring128", "kind": "ring", "dims": [128], "link": {"bandwidth": "45 GB/s", "latency": "1 us"}},
        "collective": {"op": "all_gather"},
        "input": {"bytes_per_device": "64 KiB", "dtype": "float32"},
        "algorithm": "bidirectional_ring",
        "data": "none",
        "faults": [{"link": [3, 4], "bandwidth": "10%", "direction": "one-way"}],
        "stragglers": {"0": "3 us", "17": "0.5 us", "100": "12 us"},
    }
    torus = {
        "name": "torus8x8_all_to_all_link_down",
        "topology": {"name": "torus8x8", "kind": "torus", "dims": [8, 8], "link": {"bandwidth": "45 GB/s", "latency": "1 us"}},
        "collective": {"op": "all_to_all", "split_axis": 0, "concat_axis": 0},
        "input": {"shape": [64, 64], "dtype": "float32"},
        "data": "none",
        "faults": [{"link": [[0, 1], [0, 2]], "state": "down"}],
        "stragglers": {"5": "2 us"},
    }
    out = []
    for case in (ring, torus):
        path = folder / f"{case['name']}.yaml"
        path.write_text(json.dumps(case))
        out.append(("run", path))
    slices = [("tpu-v4:4x4x4", 2), ("tpu-v4:4x4x8", 2)] + ([("tpu-v4:8x8x8", 8), ("tpu-v5e:16x16", 8)] if big else [])
    for slice_name, layers in slices:
        out.append(("program", write_program(fsdp_program(slice_name, layers), folder)))
    return out


def run_child(checkout: Path, command: str, path: Path) -> dict:
    done = subprocess.run([sys.executable, "-I", "-c", CHILD, str(checkout), command, str(path)], capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("SAME-EVENTS ")]
    if not lines:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    return json.loads(lines[-1][len("SAME-EVENTS ") :])


def differences(a: object, b: object, where: str = "") -> list[str]:
    """Where two JSON values differ (floats compared exactly), at most a few."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = [f"{where}.{k}: only in one" for k in sorted(set(a) ^ set(b))]
        for k in a.keys() & b.keys():
            found += differences(a[k], b[k], f"{where}.{k}")
        return found[:5]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items against {len(b)}"]
        found = []
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            found += differences(x, y, f"{where}[{k}]")
            if len(found) >= 5:
                break
        return found[:5]
    return [] if a == b and type(a) is type(b) else [f"{where}: {a!r} against {b!r}"[:300]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--big", action="store_true", help="also the 8-layer programs on tpu-v4:8x8x8 and tpu-v5e:16x16")
    parser.add_argument("--only", action="append", default=[], help="only files whose path holds this word (repeatable)")
    args = parser.parse_args()
    base = args.base.resolve()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    base_commit = subprocess.run(["git", "-C", str(base), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"same events: {ROOT} ({commit}) against {base} ({base_commit}), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = bundled() + written(Path(tmp), args.big)
        if args.only:
            cases = [(c, p) for c, p in cases if any(word in str(p) for word in args.only)]
        for command, path in cases:
            start = time.perf_counter()
            ours, theirs = run_child(ROOT, command, path), run_child(base, command, path)
            found = differences(ours, theirs)
            engines = sorted({str(m.get("json", {}).get("engine", "-")) for m in ours.values() if isinstance(m, dict) and isinstance(m.get("json"), dict)})
            verdict = "same" if not found else "DIFFERENT"
            failed += bool(found)
            print(f"{verdict:9} {command:7} {path.name if path.is_absolute() else path}  (engines {', '.join(engines)}; {time.perf_counter() - start:.1f} s)")
            for line in found:
                print(f"          {line}")
    print(f"{len(cases) - failed} of {len(cases)} files give the same JSON in both checkouts")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

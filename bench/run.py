"""netsim's benchmarks: one command, figures printed, netsim against a naive SimPy reference.

    PYTHONPATH=$PWD python bench/run.py            # everything (several minutes)
    PYTHONPATH=$PWD python bench/run.py --quick    # N <= 256 only

Wall times are the best of ``--repeat`` runs (default 3) of netsim, in this
process, one after another; the naive reference (bench/naive.py) runs on the
same scenario in the same run. The load average is printed with each figure
because the machine is shared. These are benchmarks, not tests: nothing here
fails on a slow machine, but every run checks its data.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import naive  # noqa: E402

from netsim.engine import play  # noqa: E402
from netsim.schedules import build_schedule  # noqa: E402
from netsim.topology import ring  # noqa: E402

MiB = 2**20
BANDWIDTH_BPS = 45e9
LATENCY_S = 1e-6


def load() -> str:
    return "load %.2f" % os.getloadavg()[0]


def ring_input(n: int, total_bytes: int = 64 * MiB) -> np.ndarray:
    """64 MiB in total of random bytes (seed 0), stacked [n, total / n]."""
    return np.random.default_rng(0).integers(0, 256, total_bytes, dtype=np.uint8).reshape(n, total_bytes // n)


def check_chunks(x: np.ndarray, held: list[dict], sources: list[dict] | None, samples: int = 2) -> str:
    """Every device holds every (block, piece); each is the source's own array (moved, never
    copied); and sampled devices' gathered data equal the input, value by value."""
    n = x.shape[0]
    for d in range(n):
        if len(held[d]) != 2 * n:
            raise AssertionError(f"device {d} holds {len(held[d])} chunks, expected {2 * n}")
        if sources is not None:
            for key, chunk in held[d].items():
                if chunk is not sources[key[0]][key]:
                    raise AssertionError(f"device {d} holds a copy of chunk {key}, not the source's array")
    for d in sorted({0, n - 1} | set(range(0, n, max(1, n // samples)))):
        gathered = np.concatenate([held[d][(b, p)] for b in range(n) for p in range(2)])
        if not np.array_equal(gathered, x.reshape(-1)):
            raise AssertionError(f"device {d}'s gathered data differ from the input")
    return "ok"


def netsim_ring(x: np.ndarray) -> dict:
    """netsim's engine on the bidirectional ring all_gather (schedule, buffers, play)."""
    n = x.shape[0]
    start, cpu = time.perf_counter(), time.process_time()
    schedule = build_schedule("gather", [list(range(n))], "bidirectional_ring")
    buffers = [{(d, p): piece for p, piece in enumerate(np.array_split(x[d], schedule.pieces))} for d in range(n)]
    playback = play(ring(n, BANDWIDTH_BPS, LATENCY_S), schedule.transfers, buffers)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"wall": wall, "cpu": cpu, "time": playback.time, "events": playback.events, "moves": len(playback.hops), "held": playback.buffers, "sources": buffers}


def naive_ring(x: np.ndarray) -> dict:
    start, cpu = time.perf_counter(), time.process_time()
    sim_time, held, events = naive.ring_all_gather(x, BANDWIDTH_BPS, LATENCY_S)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    n = x.shape[0]
    return {"wall": wall, "cpu": cpu, "time": sim_time, "events": events, "moves": 2 * n * (n - 1), "held": held, "sources": None}


def best_of(fn, x: np.ndarray, repeat: int) -> tuple[dict, list[float]]:
    runs = []
    for _ in range(repeat):
        gc.collect()
        runs.append(fn(x))
    best = min(runs, key=lambda r: r["wall"])
    return best, [r["wall"] for r in runs]


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """Slope of log y against log x (least squares)."""
    lx, ly = np.log(xs), np.log(ys)
    return float(np.polyfit(lx, ly, 1)[0])


def bench_ring(sizes: list[int], repeat: int, naive_max: int) -> None:
    print("\n## ring: bidirectional ring all_gather, 64 MiB in total, 45 GB/s, 1 us per hop")
    print("wall s: best of the runs listed; cpu s: CPU time of that run; speed-up: naive wall / netsim wall")
    print(f"{'N':>5} {'moves':>9} {'wall s':>8} {'cpu s':>7} {'runs':>17} {'events':>9} {'ev/s':>9} {'moves/s':>9} {'naive s':>8} {'cpu s':>7} {'speed-up':>8}  load")
    walls = []
    for n in sizes:
        x = ring_input(n)
        expected = (n - 1) * (LATENCY_S + x[0].nbytes / 2 / BANDWIDTH_BPS)
        ours, runs = best_of(netsim_ring, x, repeat)
        check_chunks(x, ours["held"], ours["sources"])
        if not math.isclose(ours["time"], expected, rel_tol=1e-9):
            raise AssertionError(f"netsim's simulated time {ours['time']} differs from (n-1)(alpha + s/2B) = {expected}")
        walls.append(ours["wall"])
        line = (
            f"{n:>5} {ours['moves']:>9} {ours['wall']:>8.3f} {ours['cpu']:>7.3f} {'/'.join(f'{w:.2f}' for w in runs):>17} {ours['events']:>9} "
            f"{ours['events'] / ours['wall']:>9.3g} {ours['moves'] / ours['wall']:>9.3g}"
        )
        ours = None
        if n <= naive_max:
            theirs, _ = best_of(naive_ring, x, repeat if n <= 256 else 1)
            check_chunks(x, theirs["held"], None)
            if not math.isclose(theirs["time"], expected, rel_tol=1e-9):
                raise AssertionError(f"naive simulated time {theirs['time']} differs from {expected}")
            line += f" {theirs['wall']:>8.2f} {theirs['cpu']:>7.2f} {theirs['wall'] / walls[-1]:>7.1f}x"
        else:
            line += f" {'-':>8} {'-':>7} {'-':>8}"
        print(line + f"  {load()}", flush=True)
    if len(sizes) >= 2:
        moves = [2 * n * (n - 1) for n in sizes]
        print(f"growth of wall time: N^{fit_exponent(sizes, walls):.2f}, moves^{fit_exponent(moves, walls):.2f} (fit over N = {sizes[0]}..{sizes[-1]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only N <= 256")
    parser.add_argument("--repeat", type=int, default=3, help="runs of netsim per figure (best is shown)")
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], default=None, help="ring sizes, e.g. 64,256,1024")
    parser.add_argument("--naive-max", type=int, default=1024, help="largest N the naive reference runs at")
    args = parser.parse_args()
    sizes = args.sizes or ([64, 128, 256] if args.quick else [64, 128, 256, 512, 1024])
    print(f"netsim benchmarks, {time.strftime('%Y-%m-%d %H:%M')}, Python {platform.python_version()}, {os.cpu_count()} cores, {load()}")
    bench_ring(sizes, args.repeat, args.naive_max)


if __name__ == "__main__":
    main()

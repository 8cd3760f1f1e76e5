"""netsim's benchmarks: one command, figures printed, netsim against a naive SimPy reference.

    PYTHONPATH=$PWD python bench/run.py                 # everything (several minutes)
    PYTHONPATH=$PWD python bench/run.py --quick         # N <= 256, no naive run above 256
    PYTHONPATH=$PWD python bench/run.py --only ring     # or memory, torus, pod, engines, peers, psum_scatter

Wall times are the best of ``--repeat`` runs (default 3) of netsim, one after
another in this process, with the CPU time of that run beside it; the naive
reference (bench/naive.py) runs on the same scenario in the same run. The load
average is printed with each figure because the machine is shared. These are
benchmarks, not tests: nothing here fails on a slow machine, but every run
checks its data.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import naive

from netsim.analysis.closed_forms import multiaxis_bundled
from netsim.collectives import all_gather, psum, psum_scatter
from netsim.network.device_mesh import Mesh
from netsim.network.topology import ring, torus
from netsim.network.units import format_bytes
from netsim.semantics.chunks import shape_only

MiB, GiB = 2**20, 2**30
BANDWIDTH_BPS = 45e9
LATENCY_S = 1e-6


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def ring_input(n: int, total_bytes: int = 64 * MiB) -> np.ndarray:
    """64 MiB in total of random bytes (seed 0), stacked [n, total / n]."""
    return np.random.default_rng(0).integers(0, 256, total_bytes, dtype=np.uint8).reshape(n, total_bytes // n)


def float_input(n: int, total_bytes: int = 64 * MiB) -> np.ndarray:
    """64 MiB in total of standard normal float32 (seed 0), stacked [n, total / 4 / n]."""
    return np.random.default_rng(0).standard_normal(total_bytes // 4, dtype=np.float32).reshape(n, total_bytes // 4 // n)


def timed(fn, *args, **kwargs) -> tuple[object, float, float]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def best_of(repeat: int, fn, *args, **kwargs) -> tuple[object, float, float, list[float]]:
    """The last run's result, the fastest run's wall and CPU seconds, and every run's wall seconds.

    Each run's result is dropped before the next run starts, as a sweep that keeps only
    its numbers would: a big result kept alive makes the next run take memory the process
    has never touched, and on this VM first touches cost as much as half the run."""
    walls, best, out = [], (math.inf, math.inf), None
    for _ in range(repeat):
        out = None
        out, wall, cpu = timed(fn, *args, **kwargs)
        walls.append(wall)
        best = min(best, (wall, cpu))
    return out, best[0], best[1], walls


def check_naive(x: np.ndarray, held: list[dict], samples: int = 2) -> None:
    """The naive run's data: every device holds every (block, piece), and sampled devices'
    gathered bytes equal the input."""
    n = x.shape[0]
    for d in range(n):
        if len(held[d]) != 2 * n:
            raise AssertionError(f"naive: device {d} holds {len(held[d])} chunks, expected {2 * n}")
    for d in sorted({0, n - 1} | set(range(0, n, max(1, n // samples)))):
        gathered = np.concatenate([held[d][(b, p)] for b in range(n) for p in range(2)])
        if not np.array_equal(gathered, x.reshape(-1)):
            raise AssertionError(f"naive: device {d}'s gathered data differ from the input")


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """Slope of log y against log x (least squares)."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def bench_ring(sizes: list[int], repeat: int, naive_max: int) -> None:
    print("\n## ring: bidirectional ring all_gather, 64 MiB in total, 45 GB/s, 1 us per hop")
    print("netsim: all_gather(x, topology=ring(N), output='lazy'), verified (every chunk is its owner's array, in order; sampled values);")
    print("timing-only: the same with data='none' (times must be equal bit for bit); naive: bench/naive.py, 1 run above N = 256")
    print("events: the engine's discrete events (message arrivals, link starts and ends, device wake-ups); simpy: SimPy events")
    header = f"{'N':>5} {'moves':>9} {'wall s':>7} {'cpu s':>6} {'runs':>16} {'events':>8} {'events/s':>8} {'moves/s':>8} {'simpy':>5} {'t-only s':>8}"
    header += f" {'naive s':>8} {'cpu s':>7} {'speed-up':>8}"
    print(header + "  load")
    walls = []
    for n in sizes:
        x = ring_input(n)
        topo = ring(n, BANDWIDTH_BPS, LATENCY_S)
        expected = (n - 1) * (LATENCY_S + x[0].nbytes / 2 / BANDWIDTH_BPS)
        result, wall, cpu, runs = best_of(repeat, all_gather, x, topology=topo, output="lazy")
        if not result.verified or not math.isclose(result.time, expected, rel_tol=1e-9):
            raise AssertionError(f"netsim N={n}: verified={result.verified}, time {result.time} vs (n-1)(alpha + s/2B) = {expected}")
        playback = result.leaves[0].playback
        moves, events, simpy_events, sim_time = len(playback.hops), playback.actions, playback.events, result.time
        result = playback = None
        sizes_only, t_wall, _, _ = best_of(repeat, all_gather, shape_only(x.shape, x.dtype), topology=topo, data="none")
        if sizes_only.time != sim_time:
            raise AssertionError(f"timing-only run took {sizes_only.time!r} s, the real data {sim_time!r} s")
        walls.append(wall)
        line = f"{n:>5} {moves:>9} {wall:>7.3f} {cpu:>6.2f} {'/'.join(f'{w:.2f}' for w in runs):>16} {events:>8} {events / wall:>8.3g} {moves / wall:>8.3g}"
        line += f" {simpy_events:>5} {t_wall:>8.3f}"
        if n <= naive_max:
            (naive_time, held, _), n_wall, n_cpu, _ = best_of(repeat if n <= 256 else 1, naive.ring_all_gather, x, BANDWIDTH_BPS, LATENCY_S)
            check_naive(x, held)
            held = None
            if not math.isclose(naive_time, expected, rel_tol=1e-9):
                raise AssertionError(f"naive simulated time {naive_time} differs from {expected}")
            line += f" {n_wall:>8.2f} {n_cpu:>7.2f} {n_wall / wall:>7.1f}x"
        else:
            line += f" {'-':>8} {'-':>7} {'-':>8}"
        print(line + f"  {load()}", flush=True)
    if len(sizes) >= 2:
        moves = [2 * n * (n - 1) for n in sizes]
        print(f"growth of wall time over N = {sizes[0]}..{sizes[-1]}: N^{fit_exponent(sizes, walls):.2f}, chunk moves^{fit_exponent(moves, walls):.2f}")
    for n, target in ((256, 0.12), (1024, 1.5)):
        if n in sizes:
            print(f"target N = {n}: {walls[sizes.index(n)]:.2f} s wall (target <= {target} s)")


def traced_peak(fn, *args, **kwargs) -> tuple[object, int]:
    """Run fn under tracemalloc; return its result and the peak of traced memory it added."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = fn(*args, **kwargs)
        return out, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def bench_memory(quick: bool) -> None:
    print("\n## memory: tracemalloc peak (everything Python and NumPy allocate), input created inside the measurement")
    print(f"{'case':<48} {'input':>9} {'materialised':>12} {'peak':>10} {'peak / (in + out)':>17}")
    for n in (2, 4, 8):

        def full(n=n):
            x = ring_input(n)
            return all_gather(x, topology=ring(n), output="full")

        result, peak = traced_peak(full)
        size = 64 * MiB
        out = result.output.nbytes
        case = f"all_gather ring {n}, 64 MiB, output full"
        print(f"{case:<48} {format_bytes(size):>9} {format_bytes(out):>12} {format_bytes(peak):>10} {peak / (size + out):>17.2f}")
        result = None
    for name, collective, kwargs in (("psum", psum, {}), ("psum_scatter", psum_scatter, {"tiled": True})):
        for n in (2, 4, 8):

            def reduction(n=n, collective=collective, kwargs=kwargs):
                return collective(float_input(n), topology=ring(n), output="full", **kwargs)

            result, peak = traced_peak(reduction)
            size, out = 64 * MiB, result.output.nbytes
            if not result.verified:
                raise AssertionError(f"{name} ring {n}: output not verified")
            case = f"{name} ring {n}, 64 MiB float32, output full"
            print(f"{case:<48} {format_bytes(size):>9} {format_bytes(out):>12} {format_bytes(peak):>10} {peak / (size + out):>17.2f}")
            result = None
    for n in (256,) if quick else (256, 1024):

        def lazy(n=n):
            return all_gather(ring_input(n), topology=ring(n), output="lazy", engine="fast")

        def sizes_only(n=n):
            return all_gather(shape_only((n, 64 * MiB // n), np.uint8), topology=ring(n), data="none", engine="fast")

        result, peak = traced_peak(lazy)
        transfers = len(result.leaves[0].schedule.transfers)
        result = None
        _, bookkeeping = traced_peak(sizes_only)
        size = 64 * MiB
        print(f"{f'all_gather ring {n}, 64 MiB, output lazy':<48} {format_bytes(size):>9} {'0 (lazy)':>12} {format_bytes(peak):>10} {peak / size:>17.2f}")
        print(
            f"{'  the same, data none (bookkeeping only)':<48} {'0':>9} {'0':>12} {format_bytes(bookkeeping):>10} "
            f"{'':>17}  {bookkeeping / transfers:.0f} B per transfer; data: {format_bytes(peak - bookkeeping)}"
        )


def axis_groups(dims: tuple[int, ...], axis: int) -> list[list[int]]:
    """Groups of devices that differ only along ``axis``, in order along it."""
    ids = np.arange(math.prod(dims)).reshape(dims)
    return np.moveaxis(ids, axis, -1).reshape(-1, dims[axis]).tolist()


def bench_pod(repeat: int, quick: bool) -> None:
    """The all_gather over all three axes at once, 1 GiB in total: multiaxis_bundled (one message
    per ring step) up to the full 16x16x16 pod, multiaxis (chunks streamed) where it fits."""
    print("\n## pod: all_gather over all three mesh axes at once, 1 GiB in total, 45 GB/s, 1 us")
    print("multiaxis_bundled: a member's super-block is one message per ring step (one transfer per step, link direction and part);")
    print("multiaxis: every block piece is its own transfer and goes on as soon as it arrives (n(n-1) x 6 transfers)")
    print("events: the engine's discrete events (arrivals, link starts and ends, device wake-ups)")
    header = f"{'torus':>9} {'algorithm':>18} {'data':>12} {'wall s':>7} {'cpu s':>6} {'runs':>15} {'transfers':>10} {'events':>9}"
    print(header + f" {'events/s':>8} {'transfers/s':>11} {'simulated':>11}  load")
    cases = [((4, 4, 4), "multiaxis_bundled", "none"), ((4, 4, 4), "multiaxis", "none")]
    cases += [((8, 8, 8), "multiaxis_bundled", "none"), ((8, 8, 8), "multiaxis_bundled", "values")]
    if not quick:
        cases += [((8, 8, 8), "multiaxis", "none"), ((16, 16, 16), "multiaxis_bundled", "none")]
    for dims, algorithm, data in cases:
        n = math.prod(dims)
        topo = torus(dims, True, BANDWIDTH_BPS, LATENCY_S)
        mesh = Mesh({"x": dims[0], "y": dims[1], "z": dims[2]}, topo)
        shape = (n, GiB // n // 4)
        x = shape_only(shape, "float32") if data == "none" else np.random.default_rng(0).standard_normal(shape, np.float32)
        runs_here = repeat if n <= 512 and data == "none" and not (algorithm == "multiaxis" and n > 64) else 1
        result, wall, cpu, runs = best_of(runs_here, gather_over_mesh, mesh, x, algorithm, data)
        transfers = len(result.leaves[0].schedule.transfers)
        events = result.leaves[0].playback.actions
        if algorithm == "multiaxis_bundled":
            expected_transfers = 3 * sum(2 * (d - 1) * n for d in dims)
            # the closed form with every piece as big as the biggest (np.array_split's first), 6 pieces a block
            expected = multiaxis_bundled(dims, 6 * -(-shape[1] // 6) * 4, LATENCY_S, BANDWIDTH_BPS).time_s
            if not math.isclose(result.time, expected, rel_tol=1e-9):
                raise AssertionError(f"{dims} {algorithm}: time {result.time} vs the closed form {expected}")
        else:
            expected_transfers = n * (n - 1) * 6
        if transfers != expected_transfers:
            raise AssertionError(f"{dims} {algorithm}: {transfers} transfers, expected {expected_transfers}")
        if data == "values" and not result.verified:
            raise AssertionError(f"{dims} {algorithm}: not verified")
        what = "values, lazy" if data == "values" else "none"
        print(
            f"{'x'.join(map(str, dims)):>9} {algorithm:>18} {what:>12} {wall:>7.2f} {cpu:>6.2f} {'/'.join(f'{w:.2f}' for w in runs):>15} {transfers:>10,} "
            f"{events:>9,} {events / wall:>8.3g} {transfers / wall:>11,.0f} {result.time * 1e3:>8.3f} ms  {load()}",
            flush=True,
        )
        if data == "values":
            print(f"          ({result.verification})")
        result = x = None
    if not quick:
        print(f"16x16x16 multiaxis_bundled, none, in a fresh process (numba's import and its cached loop's load included): {fresh_pod_cpu():.2f} s CPU")
    print("targets: 8x8x8 <= 2 s, 16x16x16 <= 2 s (CPU: Mesh.groups and all_gather through the API; the play is compiled from 20,000 transfers up)")


def gather_over_mesh(mesh: Mesh, x: object, algorithm: str, data: str) -> object:
    """What a user times: the mesh's groups over its three axes, then the all_gather."""
    return all_gather(x, axis_index_groups=mesh.groups(("x", "y", "z")), algorithm=algorithm, data=data, engine="fast")


def fresh_pod_cpu() -> float:
    """CPU seconds of the 16x16x16 pod (timing only) in a new Python process, imports excluded, numba's load included."""
    code = (
        "import time; from netsim.collectives import all_gather; from netsim.network.device_mesh import Mesh; "
        "from netsim.network.topology import torus; from netsim.semantics.chunks import shape_only; "
        "topo = torus((16, 16, 16), True, 45e9, 1e-6); mesh = Mesh({'x': 16, 'y': 16, 'z': 16}, topo); "
        "x = shape_only((4096, 2**30 // 4096 // 4), 'float32'); t = time.process_time(); "
        "all_gather(x, axis_index_groups=mesh.groups(('x', 'y', 'z')), algorithm='multiaxis_bundled', data='none', engine='fast'); "
        "print(time.process_time() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=dict(os.environ))
    return float(out.stdout.split()[-1])


def bench_torus(repeat: int, quick: bool) -> None:
    print("\n## torus: TPU v4 pod slices, 3D torus with wraparound, 45 GB/s, 1 us, all_gather of 1 GiB in total")
    for dims in ((8, 8, 8),) if quick else ((8, 8, 8), (16, 16, 16)):
        n = math.prod(dims)
        topo = torus(dims, True, BANDWIDTH_BPS, LATENCY_S)
        print(f"torus {'x'.join(map(str, dims))} ({n} devices), axis after axis (the all-axes run is in the pod section):")
        # What exists: the dimension-by-dimension all_gather, one bidirectional ring per axis
        # group, axis after axis, each phase gathering what the previous one produced.
        per_device = GiB // n
        total_time, total_wall, total_moves = 0.0, 0.0, 0
        for axis in range(3):
            group = dims[axis]
            shape = (n, per_device * math.prod(dims[:axis]))
            data = "values" if axis == 0 else "none"
            x = np.random.default_rng(axis).integers(0, 256, shape, dtype=np.uint8) if data == "values" else shape_only(shape, np.uint8)
            groups = axis_groups(dims, axis)
            result, wall, cpu, runs = best_of(repeat, all_gather, x, axis_index_groups=groups, topology=topo, output="lazy", data=data)
            expected = (group - 1) * (LATENCY_S + shape[1] / 2 / BANDWIDTH_BPS)
            if not math.isclose(result.time, expected, rel_tol=1e-9):
                raise AssertionError(f"axis {axis}: time {result.time} vs (n-1)(alpha + s/2B) = {expected}")
            moves = len(result.leaves[0].playback.hops)
            total_time, total_wall, total_moves = total_time + result.time, total_wall + wall, total_moves + moves
            what = "values, lazy output verified" if data == "values" else "data none (input would be " + format_bytes(shape[0] * shape[1]) + ")"
            print(
                f"  phase {axis + 1}: all_gather along axis {axis}, {len(groups)} rings of {group}, {format_bytes(shape[1])} per device, {what}: "
                f"{wall:.3f} s wall ({cpu:.2f} cpu; runs {'/'.join(f'{w:.2f}' for w in runs)}), {moves} moves, simulated {result.time * 1e6:.1f} us  {load()}"
            )
            result = x = None
        print(f"  three phases: {total_wall:.2f} s wall in all, {total_moves} chunk moves, simulated {total_time * 1e3:.3f} ms (phases do not overlap)")


def bench_engines(repeat: int) -> None:
    """The process model against the fast player on the same runs: same times, and what each costs."""
    print("\n## engines: the model as SimPy processes against the fast player, bidirectional ring all_gather of 64 MiB")
    print("(engine='processes' / 'fast' through the API, lazy output verified; both must give the same time bit for bit)")
    print(f"{'N':>5} {'transfers':>10} {'processes s':>12} {'fast s':>8} {'ratio':>6} {'us/transfer (processes, fast)':>30}  load")
    for n in (8, 32, 64, 128, 256):
        played = {}
        for engine in ("processes", "fast"):
            result, _, cpu, _ = best_of(repeat, all_gather, ring_input(n), topology=ring(n), output="lazy", engine=engine)
            played[engine] = (result.time, cpu, len(result.leaves[0].schedule.transfers))
        (t_p, cpu_p, count), (t_f, cpu_f, _) = played["processes"], played["fast"]
        if t_p != t_f:
            raise AssertionError(f"N={n}: the engines differ: {t_p!r} against {t_f!r}")
        per = f"{cpu_p / count * 1e6:.1f}, {cpu_f / count * 1e6:.1f}"
        print(f"{n:>5} {count:>10,} {cpu_p:>12.3f} {cpu_f:>8.3f} {cpu_p / cpu_f:>5.1f}x {per:>30}  {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N <= 256, 8x8x8 only, smaller memory runs")
    parser.add_argument("--repeat", type=int, default=3, help="runs of netsim per figure (best is shown)")
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], default=None, help="ring sizes, e.g. 64,256,1024")
    parser.add_argument("--naive-max", type=int, default=None, help="largest N the naive reference runs at (default: all, 256 with --quick)")
    parser.add_argument(
        "--only", choices=["ring", "memory", "torus", "pod", "engines", "peers", "psum_scatter"], action="append", help="run only these benchmarks"
    )
    parser.add_argument("--peers-max", type=int, default=256, help="largest N the naive reference and ns.py run at in the peers section")
    parser.add_argument("--simgrid-python-max", type=int, default=256, help="largest N SimGrid's Python bindings run at")
    args = parser.parse_args()
    sizes = args.sizes or ([64, 128, 256] if args.quick else [64, 128, 256, 512, 1024])
    naive_max = args.naive_max if args.naive_max is not None else (256 if args.quick else max(sizes))
    only = set(args.only or ["ring", "memory", "torus", "pod", "engines", "peers", "psum_scatter"])
    print(f"netsim benchmarks, {time.strftime('%Y-%m-%d %H:%M')}, Python {platform.python_version()}, {os.cpu_count()} cores, {load()}")
    if "ring" in only:
        bench_ring(sizes, args.repeat, naive_max)
    if "torus" in only:
        bench_torus(args.repeat, args.quick)
    if "pod" in only:
        bench_pod(args.repeat, args.quick)
    if "memory" in only:
        bench_memory(args.quick)
    if "engines" in only:
        bench_engines(args.repeat)
    if "psum_scatter" in only:
        peers.bench_psum_scatter(args.repeat)
    if "peers" in only:
        peers.bench_peers(args.sizes or ([64, 256] if args.quick else [64, 256, 1024]), args.peers_max, args.simgrid_python_max)


if __name__ == "__main__":
    import peers  # (imports this module: loaded once it is whole)

    main()

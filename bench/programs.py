"""Program scale: FSDP programs and a TPU-compiled module on big slices, each in a fresh process, timing only.

    PYTHONPATH=$PWD python bench/programs.py                   # every case and the scaling fits (multiaxis, multiaxis_bundled)
    PYTHONPATH=$PWD python bench/programs.py --only fsdp8_v5e  # one case (names: --list)
    PYTHONPATH=$PWD python bench/programs.py --stages          # where memory goes, 1 and 2 layers on tpu-v5e:16x16
    PYTHONPATH=$PWD python bench/programs.py --write DIR       # only write the program files
    PYTHONPATH=$PWD python bench/programs.py --only fsdp32_v5e --against ../other-checkout --repeat 5   # A/B, taking turns

Each case is a program file written by this script (FSDP: per layer, an ``all_gather`` of
the layer's weights over every mesh axis, then a matmul; B = 65536, D = 4096, bf16,
``data: none``; each gather starts once the previous one is done on the chip, as in
``scenarios/programs/fsdp_two_layers.yaml``), or one of ``bench/data/mlp_v5p_16x16x16*.yaml``
(an MLP that ``scripts/make_tpu_module.py`` compiled with libtpu for a v5p 16x16x16 pod, its
all-reduce over lines of 16 chips or over 16x16 planes). It runs in a fresh
``python -I`` process that puts this checkout first on its path, checks that
``netsim.__file__`` is the checkout's, and does what ``netsim program FILE --data none``
does (run the file, then its statistics), without printing. Reported: transfers and
compute steps of the lowered schedule, the child's CPU seconds (user + system, from its
start: the interpreter, the imports, the run), the wall seconds from spawning it to its
exit, and its peak RSS (``getrusage`` in the child). The parent polls the child's RSS
(``/proc``, every 50 ms) and kills it above ``--cap-gib`` (default 6) or after its time
cap, saying so: "killed at X GiB after Y s". Nothing here fails on a slow machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
GiB = 2**30
PAGE = os.sysconf("SC_PAGE_SIZE")
AXES = "XYZ"


def fsdp_program(
    slice_name: str, layers: int, batch: int = 65536, model: int = 4096, tp_psum: bool = False, chained: bool = True, algorithm: str | None = None
) -> dict:
    """An FSDP program on a TPU slice, as a program file's mapping.

    Every array is split over all the mesh's axes on its first dimension. Layer ``i``
    gathers ``W{i}`` (``all_gather`` over every axis, tiled, dimension 0), then multiplies
    the activations by it; gather ``i`` waits (``after``) for gather ``i - 1`` on the chip,
    so it travels while layer ``i - 1`` multiplies. ``tp_psum`` adds, after the last layer,
    a tensor-parallel matmul over the first axis (activations split on their contracting
    dimension, weights on their rows) and the ``psum`` over that axis it needs.
    ``chained=False`` leaves out the ``after``: every gather may start at once.
    ``algorithm`` names the gathers' algorithm (default: a program's, ``multiaxis``, or ``multiaxis_bundled`` past 2^24 transfers);
    ``multiaxis_bundled`` sends one message per ring step, as a TPU pod does.

    Examples
    --------
    >>> p = fsdp_program("tpu-v5e:2x2", 2, batch=16, model=8)
    >>> p["mesh"], [op["name"] for op in p["ops"]], p["ops"][2]["after"]
    ({'X': 2, 'Y': 2}, ['gather_W1', 'layer1', 'gather_W2', 'layer2'], ['gather_W1'])
    """
    dims = [int(d) for d in slice_name.split(":")[1].split("x")]
    mesh = {AXES[i]: d for i, d in enumerate(dims)}
    every = list(mesh)
    arrays = {"x": {"shape": ["B", "D"], "dtype": "bfloat16", "sharding": [every, None]}}
    ops, h = [], "x"
    for i in range(1, layers + 1):
        arrays[f"W{i}"] = {"shape": ["D", "D"], "dtype": "bfloat16", "sharding": [every, None]}
        gather = {"name": f"gather_W{i}", "op": "all_gather", "in": f"W{i}", "axes": every, "axis": 0, "tiled": True, "out": f"W{i}_full"}
        if i > 1 and chained:
            gather["after"] = [f"gather_W{i - 1}"]
        if algorithm is not None:
            gather["algorithm"] = algorithm
        ops += [gather, {"name": f"layer{i}", "op": "matmul", "in": [h, f"W{i}_full"], "out": f"h{i}"}]
        h = f"h{i}"
    if tp_psum:
        tp, rest = every[0], every[1:]
        arrays["t"] = {"shape": ["B", "D"], "dtype": "bfloat16", "sharding": [rest or None, tp]}
        arrays["W_tp"] = {"shape": ["D", "D"], "dtype": "bfloat16", "sharding": [tp, None]}
        ops += [
            {"name": "tp_matmul", "op": "matmul", "in": ["t", "W_tp"], "out": "t_partial", "after": [f"layer{layers}"]},
            {"name": "tp_psum", "op": "psum", "in": "t_partial", "axes": [tp], "out": "t_out"},
        ]
    name = f"fsdp{layers}_{slice_name.replace(':', '_')}" + ("_tp" if tp_psum else "") + ("" if chained else "_unchained")
    return {"name": name, "topology": slice_name, "mesh": mesh, "params": {"B": batch, "D": model}, "arrays": arrays, "ops": ops, "data": "none"}


def write_program(program: dict, folder: Path) -> Path:
    """Write a program mapping as ``folder/NAME.yaml`` (JSON is YAML: no YAML writer needed)."""
    path = folder / f"{program['name']}.yaml"
    path.write_text(json.dumps(program, indent=1) + "\n")
    return path


@dataclass(frozen=True)
class Case:
    """One program, where it comes from, and its targets (None: no target, e.g. a point of the fit)."""

    name: str
    program: dict | None
    file: Path | None = None
    target_s: float | None = None
    target_gib: float | None = None


def cases() -> list[Case]:
    """The benchmark's cases, in the order they run."""
    return [
        Case("fsdp8_v5e", fsdp_program("tpu-v5e:16x16", 8)),
        Case("fsdp32_v5e", fsdp_program("tpu-v5e:16x16", 32), target_s=10, target_gib=2),
        Case("fsdp8_v4_512", fsdp_program("tpu-v4:8x8x8", 8), target_s=10, target_gib=2),
        Case("fsdp4_tp_v4_4096", fsdp_program("tpu-v4:16x16x16", 4, tp_psum=True), target_s=60, target_gib=4),  # default plans: bundled gathers
        Case("mlp_v5p_4096", None, DATA / "mlp_v5p_16x16x16.yaml", target_s=60, target_gib=4),
        Case("mlp_v5p_4096_plane", None, DATA / "mlp_v5p_16x16x16_plane.yaml", target_s=60, target_gib=4),
        Case("llama70b_step", None, ROOT / "scenarios" / "programs" / "steps" / "llama70b_train_step.yaml", target_s=60, target_gib=4),
    ]


FIT_SLICES = ("4x4x4", "4x4x8", "4x8x8", "8x8x8", "8x8x16", "8x16x16", "16x16x16")

CHILD = r"""
import json, os, resource, sys, time
start = time.perf_counter()
checkout, path, stages = sys.argv[1], sys.argv[2], sys.argv[3].startswith("stages")
refusal = sys.argv[4] == "refusal"
sys.path.insert(0, checkout)
def note(**fields):
    print("BENCH " + json.dumps(fields), flush=True)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
def cpu():
    t = os.times()
    return t.user + t.system
def mark(stage, start):
    note(stage=stage, wall_s=time.perf_counter() - start, rss=rss(), peak=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, cpu_s=cpu())
import atexit, faulthandler, signal
faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False)
atexit.register(lambda: note(exit=True, cpu_s=cpu(), peak=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))
import netsim
where = os.path.realpath(netsim.__file__)
assert where.startswith(os.path.realpath(checkout) + os.sep), f"netsim imported from {where}, not from {checkout}"
mark("import", start)
if not refusal:  # (--no-memory-refusal: the memory estimate's refusal off; the run is the same)
    import netsim.checks.memory
    netsim.checks.memory.available_memory = lambda: None
if stages:
    import gc, tracemalloc
    import numpy as np
    try:
        from netsim.programs.files import load_program
        from netsim.programs.lowering import lower
        from netsim.programs.run import play_lowered
    except ModuleNotFoundError:  # a checkout from before netsim/programs/ held the program modules
        from netsim.algorithms.program_lowering import lower
        from netsim.programs import play_lowered
        from netsim.scenario.programs import load_program
    trace_play = sys.argv[3] == "stages-play"
    def top(snapshot, n=8):
        stats = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)]).statistics("lineno")
        return [(f"{s.traceback[0].filename.replace(checkout + '/', '')}:{s.traceback[0].lineno}", s.size) for s in stats[:n]]
    loaded = load_program(path)
    mark("load", start)
    tracemalloc.start()
    lowered = lower(loaded.program, loaded.mesh_obj)
    table = lowered.schedule.transfers
    deps = sum(len(c.deps) for c in lowered.schedule.computes)
    columns = ("step", "src", "dst", "block", "piece", "reduce", "direction", "phase", "dep_ptr", "dep_idx")
    sends, arrivals = np.bincount(table.src, minlength=loaded.mesh_obj.topology.n_devices), np.bincount(table.dst, minlength=loaded.mesh_obj.topology.n_devices)
    note(chained_extra=int((sends * arrivals).sum()))
    note(transfers=len(table), computes=len(lowered.schedule.computes), dep_entries=int(len(table.dep_idx)), compute_dep_entries=deps,
         table_bytes=int(sum(getattr(table, k).nbytes for k in columns)), dep_idx_bytes=int(table.dep_idx.nbytes),
         lower_kept=tracemalloc.get_traced_memory()[0], lower_peak=tracemalloc.get_traced_memory()[1], lower_top=top(tracemalloc.take_snapshot()))
    if not trace_play:
        tracemalloc.stop()
    mark("lower", start)
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    playback, _ = play_lowered(lowered, loaded.mesh_obj.topology, "auto", values=False)
    if trace_play:
        kept, peak = tracemalloc.get_traced_memory()
        note(play_kept=kept - before, play_peak=peak - before, play_top=top(tracemalloc.take_snapshot()))
        tracemalloc.stop()
    note(engine=str(playback.engine), hops=len(playback.hops))
    mark("play", start)
    playback = lowered = None
    gc.collect()
    mark("dropped", start)
else:
    try:
        from netsim.cli.program import run_or_exit
        result = run_or_exit(path, "none")
    except ImportError:
        result = netsim.run_program(path, data="none")
    schedule = result.leaves[0].schedule
    note(transfers=len(schedule.transfers), computes=len(schedule.computes), time_s=result.time)
    mark("run", start)
    from netsim.analysis.program_stats import program_stats
    program_stats(result)
    mark("stats", start)
note(done=True, cpu_s=cpu(), peak=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def child_rss(pid: int) -> int:
    """Resident bytes of a process (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError):
        return 0


def child_cpu(pid: int) -> float:
    """User + system CPU seconds of a live process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def run_child(path: Path, cap_bytes: int, timeout_s: float, mode: str = "run", checkout: Path = ROOT, refusal: bool = True) -> dict:
    """Run one program file in a fresh ``python -I`` process under the memory and time caps; what it reported.

    ``mode``: ``"run"`` (what ``netsim program FILE --data none`` does), ``"stages"`` (load, lower
    under tracemalloc, play, each stage's RSS) or ``"stages-play"`` (the play under tracemalloc too).
    ``checkout``: the netsim checkout the child imports (default this one); ``refusal=False`` turns
    off the refusal of runs whose memory estimate exceeds the memory available.

    Returns the child's notes merged (``transfers``, ``computes``, ``cpu_s``, ``peak``, ...),
    ``wall_s`` (spawn to exit), ``stage_log`` (each stage's figures), ``max_rss_polled``, and,
    when it did not finish, ``killed`` (why) or ``error`` (its last line of stderr).
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        argv = [sys.executable, "-I", "-c", CHILD, str(checkout), str(path), mode, "refusal" if refusal else "none"]
        child = subprocess.Popen(argv, stdout=out, stderr=err, cwd=checkout, start_new_session=True)
        polled, killed, cpu_at_kill = 0, None, None
        while child.poll() is None:
            rss = child_rss(child.pid)
            polled = max(polled, rss)
            elapsed = time.perf_counter() - start
            if rss > cap_bytes or elapsed > timeout_s:
                cpu_at_kill = child_cpu(child.pid)
                os.kill(child.pid, signal.SIGUSR1)  # faulthandler: the child's Python stack, to say where it was
                time.sleep(0.3)
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                why = "memory cap" if rss > cap_bytes else "time cap"
                killed = f"killed at {rss / GiB:.2f} GiB after {elapsed:.1f} s ({why})"
                break
            time.sleep(0.05)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        report: dict = {"max_rss_polled": polled, "stage_log": []}
        for line in out:
            if line.startswith("BENCH "):
                note = json.loads(line[6:])
                if "stage" in note:
                    report["stage_log"].append(note)
                else:
                    report.update(note)
        if killed:
            report.update(killed=killed, cpu_s=cpu_at_kill, where=where_killed(err.read()))
        elif not report.get("done"):
            lines = [x for x in err.read().splitlines() if x.strip()]
            said = [x for x in lines if x.startswith("error:")] or lines
            report["error"] = f"exit {child.returncode}: {said[-1] if said else 'no message'}"
        report["wall_s"] = wall
    return report


def where_killed(stderr: str) -> str:
    """The innermost netsim frames of the stack faulthandler dumped (most recent call first), e.g. ``program_lowering.py:213 _with_extra``."""
    frames = []
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith('File "') and "/netsim/" in line:
            path, rest = line[6:].split('", line ', 1)
            number, _, function = rest.partition(" in ")
            frames.append(f"{path.split('/netsim/', 1)[1]}:{number} {function}")
    return " < ".join(frames[:3]) or "not in netsim"


def verdict(case: Case, report: dict) -> str:
    """Whether the case met its targets, and the figure that decides it."""
    if case.target_s is None:
        return "-"
    if "killed" in report or "error" in report:
        return "not met (did not finish)"
    misses = []
    if report["wall_s"] > case.target_s:
        misses.append(f"{report['wall_s']:.1f} s > {case.target_s:g} s")
    if report["peak"] > case.target_gib * GiB:
        misses.append(f"{report['peak'] / GiB:.2f} GiB > {case.target_gib:g} GiB")
    return "met" if not misses else "not met: " + ", ".join(misses)


def fmt_int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def print_row(name: str, case: Case, report: dict) -> None:
    peak = report.get("peak")
    target = "" if case.target_s is None else f"<= {case.target_s:g} s, {case.target_gib:g} GiB"
    cpu = report.get("cpu_s")
    cpu_text = "-" if cpu is None else f"{cpu:.1f}"
    line = f"{name:<22} {fmt_int(report.get('transfers')):>12} {fmt_int(report.get('computes')):>8} {cpu_text:>7} {report['wall_s']:>7.1f}"
    line += f" {'-' if peak is None else f'{peak / GiB:.2f}':>8} {target:>20}  {verdict(case, report)}"
    print(line, flush=True)
    stage = report["stage_log"][-1]["stage"] if report["stage_log"] else "start"
    if "killed" in report:
        print(f"{'':<22}   {report['killed']}; last stage done: {stage}; in {report['where']}", flush=True)
    elif "error" in report:
        print(f"{'':<22}   {report['error']}", flush=True)


HEADER = f"{'case':<22} {'transfers':>12} {'computes':>8} {'cpu s':>7} {'wall s':>7} {'peak GiB':>8} {'target':>20}  met"


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """Slope of log y against log x (least squares)."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def bench_cases(selected: list[Case], folder: Path, cap: int, factor: float, minimum: float) -> None:
    print("\n## program scale: fresh process per case, timing only (data: none)")
    print(HEADER)
    for case in selected:
        path = case.file if case.program is None else write_program(case.program, folder)
        if path is None or not path.is_file():
            print(f"{case.name:<22} skipped: {path} is missing (make it with scripts/make_tpu_module.py, which needs libtpu)")
            continue
        timeout = max(minimum, factor * (case.target_s or minimum))
        print_row(case.name, case, run_child(path, cap, timeout))


def bench_ab(selected: list[Case], folder: Path, cap: int, timeout: float, against: Path, repeat: int, refusal: bool) -> None:
    """Each case on this checkout (A) and on ``against`` (B), taking turns (A B A B ...), ``repeat`` times each: every run, then medians and A/B."""
    print(f"\n## A/B: A = {ROOT}, B = {against}, {repeat} runs each, taking turns; CPU s, wall s, peak GiB; load before each run")
    print(HEADER)
    for case in selected:
        path = case.file if case.program is None else write_program(case.program, folder)
        runs: dict[str, list[dict]] = {"A": [], "B": []}
        for _ in range(repeat):
            for label, checkout in (("A", ROOT), ("B", against)):
                load = os.getloadavg()[0]
                report = run_child(path, cap, timeout, checkout=checkout, refusal=refusal)
                print_row(f"{case.name} {label} ({load:.1f})", case, report)
                if "killed" not in report and "error" not in report:
                    runs[label].append(report)
        medians = {k: {f: float(np.median([r[f] for r in v])) for f in ("cpu_s", "wall_s", "peak")} for k, v in runs.items() if v}
        for label, m in medians.items():
            print(f"{case.name} {label}: median of {len(runs[label])}: {m['cpu_s']:.2f} s CPU, {m['wall_s']:.1f} s wall, {m['peak'] / GiB:.2f} GiB")
        if len(medians) == 2:
            a, b = medians["A"], medians["B"]
            print(f"{case.name} A/B: CPU {a['cpu_s'] / b['cpu_s']:.3f}, wall {a['wall_s'] / b['wall_s']:.3f}, peak {a['peak'] / b['peak']:.3f}")


def bench_fit(slices: list[str], layers: int, folder: Path, cap: int, timeout: float, algorithm: str | None = None) -> None:
    gathers = f"gathers by {algorithm}" if algorithm else "gathers by the default plan (multiaxis; multiaxis_bundled past 2^24 transfers)"
    print(f"\n## scaling: the {layers}-layer FSDP program on tpu-v4 slices, {gathers}, wall time against transfers + compute steps (target: exponent <= 1.1)")
    print(HEADER)
    work, walls = [], []
    for dims in slices:
        case = Case(f"fit {dims}", fsdp_program(f"tpu-v4:{dims}", layers, algorithm=algorithm))
        report = run_child(write_program(case.program, folder), cap, timeout)
        print_row(case.name, case, report)
        if report.get("done"):
            work.append(report["transfers"] + report["computes"])
            walls.append(report["wall_s"])
    if len(work) >= 2:
        exponent = fit_exponent(work, walls)
        met = "met" if exponent <= 1.1 else "not met"
        print(f"fitted exponent over the {len(work)} slices that finished: wall ~ (transfers + computes)^{exponent:.2f} ({met})")
        if len(work) < len(slices):
            print("  (slices that did not finish are left out: the fit does not cover the whole range 64..4096)")
    else:
        print("fitted exponent: not enough slices finished to fit (target not met)")


def bench_stages(folder: Path, cap: int, timeout: float, trace_play: bool) -> None:
    print("\n## where memory goes: 1 and 2 FSDP layers on tpu-v5e:16x16, stage by stage; 2 layers again without after: (no quadratic dependencies)")
    print("RSS after each stage and the peak so far (getrusage); the lowering under tracemalloc" + (", the play too" if trace_play else ""))
    mib = 2**20
    for layers, chained in ((1, True), (2, True), (2, False)):
        program = fsdp_program("tpu-v5e:16x16", layers, chained=chained)
        report = run_child(write_program(program, folder), cap, timeout, "stages-play" if trace_play else "stages")
        title = f"{layers} layer(s)" + ("" if chained else ", no after: (the gathers are not chained)")
        counts = f"transfers {fmt_int(report.get('transfers'))}, compute steps {fmt_int(report.get('computes'))}"
        deps = f"dependency entries: transfers' {fmt_int(report.get('dep_entries'))}, compute steps' {fmt_int(report.get('compute_dep_entries'))}"
        print(f"\n{title}: {counts}, {deps}")
        if layers == 1 and "chained_extra" in report:
            extra = report["chained_extra"]
            print(
                f"  a next layer's gather chained by after: would add sum over devices of its sends x this gather's arrivals = "
                f"{extra:,} dependency entries ({extra * 8 / GiB:.1f} GiB as int64), per chained layer"
            )
        for note in report["stage_log"]:
            print(f"  after {note['stage']:<8} {note['wall_s']:>7.2f} s  RSS {note['rss'] / mib:>7.0f} MiB  peak {note['peak'] / mib:>7.0f} MiB")
        if "table_bytes" in report:
            print(
                f"  transfer table {report['table_bytes'] / mib:.0f} MiB (dep_idx {report['dep_idx_bytes'] / mib:.0f} MiB); "
                f"lowering: {report['lower_kept'] / mib:.0f} MiB kept, {report['lower_peak'] / mib:.0f} MiB at its peak (tracemalloc); kept by:"
            )
            for where, size in report["lower_top"]:
                print(f"    {size / mib:>8.1f} MiB  {where}")
        if "play_top" in report:
            print(f"  play ({report['engine']}): {report['play_kept'] / mib:.0f} MiB kept, {report['play_peak'] / mib:.0f} MiB at its peak; kept by:")
            for where, size in report["play_top"]:
                print(f"    {size / mib:>8.1f} MiB  {where}")
        if "killed" in report:
            print(f"  {report['killed']}, in {report['where']}")
        elif "error" in report:
            print(f"  {report['error']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", action="append", help="run only these cases (repeatable); 'fit' for the scaling fit, 'fit_bundled' for it with multiaxis_bundled gathers"
    )
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--stages", action="store_true", help="only the memory stages of 1 and 2 layers on tpu-v5e:16x16")
    parser.add_argument("--trace-play", action="store_true", help="with --stages: the play under tracemalloc too (slower)")
    parser.add_argument("--write", metavar="DIR", help="write the program files into DIR and exit")
    parser.add_argument("--cap-gib", type=float, default=6.0, help="kill a case above this RSS (default 6)")
    parser.add_argument("--time-factor", type=float, default=3.0, help="kill a case after this many times its target (default 3)")
    parser.add_argument("--min-timeout", type=float, default=60.0, help="and never before this many seconds (default 60)")
    parser.add_argument("--fit-slices", default=",".join(FIT_SLICES), help="tpu-v4 slices of the fit")
    parser.add_argument("--fit-layers", type=int, default=2, help="layers of the fit's program (default 2)")
    parser.add_argument("--against", type=Path, help="A/B: run each selected case on this checkout too, taking turns (with --repeat)")
    parser.add_argument("--repeat", type=int, default=5, help="with --against: runs per checkout (default 5)")
    parser.add_argument("--no-memory-refusal", action="store_true", help="turn off the refusal of runs whose memory estimate exceeds what is free")
    args = parser.parse_args()
    all_cases = cases()
    if args.list:
        print("\n".join([c.name for c in all_cases] + ["fit", "fit_bundled"]))
        return
    cap = int(args.cap_gib * GiB)
    with tempfile.TemporaryDirectory(prefix="netsim-bench-") as scratch:
        folder = Path(args.write or scratch)
        if args.write:
            folder.mkdir(parents=True, exist_ok=True)
            for case in all_cases:
                if case.program is not None:
                    print(write_program(case.program, folder))
            for dims in args.fit_slices.split(","):
                print(write_program(fsdp_program(f"tpu-v4:{dims}", args.fit_layers), folder))
            return
        print(
            f"netsim program scale, checkout {ROOT}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.2f}, "
            f"memory cap {args.cap_gib:g} GiB, time cap max({args.min_timeout:g} s, {args.time_factor:g} x target)"
        )
        if args.stages:
            bench_stages(folder, cap, args.min_timeout * 5, args.trace_play)
            return
        selected = [c for c in all_cases if not args.only or c.name in args.only]
        if args.against:
            bench_ab(selected, folder, cap, args.min_timeout, args.against.resolve(), args.repeat, not args.no_memory_refusal)
            return
        if selected:
            bench_cases(selected, folder, cap, args.time_factor, args.min_timeout)
        if not args.only or "fit" in args.only:
            bench_fit(args.fit_slices.split(","), args.fit_layers, folder, cap, args.min_timeout)
        if not args.only or "fit_bundled" in args.only:
            bench_fit(args.fit_slices.split(","), args.fit_layers, folder, cap, args.min_timeout, algorithm="multiaxis_bundled")


if __name__ == "__main__":
    main()

"""Whole training steps against MaxText's published MFU: the rows of docs/validation.md's "Whole steps".

Each row is a MaxText training step of ``netsim/programs/hlo/maxtext.py`` compiled ahead of
time with libtpu (``scripts/make_step_modules.py``; the modules ship in
``scenarios/programs/hlo/steps/``), simulated whole on its slice under ``calibration:
nominal`` (the ideal model: every dot at the chip's peak) and ``calibrated`` (the
generation's measured terms, among them the matmul efficiency derived here). The four
v5e-256 rows are the derivation set: each row's own efficiency is the one at which netsim's
step time equals the time MaxText's MFU implies, and v5e's efficiency is their median.
Every other row (another generation) is held out: reported with the same machinery,
never derived from.

    python scripts/validation_steps.py --simulate  # run every row, record its times (step_times.json)
    python scripts/validation_steps.py --simulate --in-order  # the nominal runs with sync collectives in the order written
    python scripts/validation_steps.py --derive    # v5e's matmul efficiency (one run per row)
    python scripts/validation_steps.py             # print the section (from the recorded times)

``scripts/validation.py`` writes the section into docs/validation.md from the recorded times;
tests/test_validation_steps.py checks the modules' FLOPs and HBM against the compiler's
own figures (``NAME.xla.json``) and the derived efficiency against the preset.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from netsim.network.calibration import calibrate, offered  # noqa: E402
from netsim.network.presets import HBM_OFFERED_GIB  # noqa: E402
from netsim.programs.hlo.maxtext import HELD_OUT, MODELS, MaxTextConfig  # noqa: E402

STEPS = ROOT / "scenarios" / "programs" / "hlo" / "steps"
MAXTEXT_TABLE = "AI-Hypercomputer/maxtext (then google/maxtext), README.md 'TPU v5e' and 'TPU v4' at commit 9bc243c95 (2023-10-27)"
MAXTEXT_V5P = "76bd53b0f (2023-12-15)"


@dataclass(frozen=True)
class StepRow:
    """One published row: the model, the module that runs it, and whether it derives the efficiency."""

    config: MaxTextConfig
    derive: bool

    @property
    def module(self) -> Path:
        return STEPS / f"{self.config.name}.txt.gz"

    @property
    def topology(self) -> str:
        return f"tpu-{self.config.topology}"

    @property
    def model(self) -> dict[str, float | bool]:
        c = self.config
        shape = {"params": c.params(), "layers": c.layers, "heads": c.heads, "head_dim": c.head_dim, "seq": c.seq, "per_device_batch": c.per_device_batch}
        return {**shape, "causal_attention": True} if c.causal_flops else shape


ROWS = tuple(StepRow(c, True) for c in MODELS.values()) + tuple(StepRow(c, False) for c in HELD_OUT.values())


@functools.lru_cache(maxsize=64)
def simulate(row: StepRow, mode: str, efficiency: float | None = None, sync: str | None = None):
    """netsim's run of ``row`` under ``mode`` (``efficiency``: the matmul efficiency tried instead of the preset's;
    ``sync``: how its sync collectives play, default as ``netsim program --hlo`` plays a TPU-compiled module)."""
    from netsim.programs.hlo.run import run_hlo
    from netsim.run import resolve_topology

    topology = calibrate(resolve_topology(row.topology, None), mode)
    if efficiency is not None:
        topology = calibrate(topology, "calibrated", dataclasses.replace(offered(topology), compute_efficiency=efficiency))
    return run_hlo(row.module, topology, compare=False, model=row.model, sync_collectives=sync)


def step_time(row: StepRow, mode: str, efficiency: float | None = None, sync: str | None = None) -> float:
    """netsim's step time of ``row`` (see :func:`simulate`)."""
    return simulate(row, mode, efficiency, sync).time


def time_at(report, efficiency: float) -> float:
    """The step time ``report`` (a run's step report) would take at another matmul efficiency.

    Each instruction of the played run takes ``max(MXU time, HBM time)``; its MXU time scales
    as the efficiency's inverse. The played run's time moves by what its instructions gain or
    lose (communication and DMA as they were), and the extended step in proportion.
    """
    scale = report.matmul_efficiency / efficiency
    delta = sum(i["runs"] * (max(i["mxu_s"] * scale, i["hbm_s"]) - max(i["mxu_s"], i["hbm_s"])) for i in report.instructions if i["bound"] != "given")
    return report.time_s * (report.played_s + delta) / report.played_s


def row_efficiency(row: StepRow) -> float:
    """The matmul efficiency at which ``row``'s step time equals the published one, from its calibrated run.

    :func:`time_at` moves the run's instructions to each efficiency tried (bisection); the
    rows are then run again at the median, and their errors are what that run gives.
    """
    from netsim.analysis.step_report import step_report

    report = step_report(simulate(row, "calibrated", None), row.model)
    target = row.config.step_time_s()
    if time_at(report, 1.0) >= target:
        return 1.0
    low, high = 0.05, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if time_at(report, middle) > target else (low, middle)
    return round(high, 4)


def derive() -> tuple[float, dict[str, float]]:
    """v5e's matmul efficiency: the median of the derivation rows' own efficiencies (as :data:`RECORDED` has them)."""
    import json

    recorded = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}
    own = {name: run["own_efficiency"] for name, run in recorded.items() if "own_efficiency" in run}
    each = {row.config.name: own[row.config.name] for row in ROWS if row.derive and row.config.name in own}
    if not each:
        raise SystemExit(f"no row has a recorded efficiency yet: run --simulate first ({RECORDED})")
    return round(statistics.median(each.values()), 3), each


def recomputed_flops(config: MaxTextConfig) -> float:
    """What remat adds to MaxText's formula: the forward pass again, in the backward pass.

    Under ``full`` remat, per layer, every matmul whose output the backward pass needs
    (queries, keys, values, the MLP's input matrix, both attention dots) runs again; the two
    whose outputs only feed the residual (attention's output projection, the MLP's output
    matrix) do not, as XLA drops recomputed work nothing reads. Per device: ``2 * tokens *
    (3 * emb * heads * head_dim + emb * mlp) * layers + 4 * heads * head_dim * seq**2 * batch
    * layers``. Under ``minimal`` remat the dots without batch dimensions (the projections)
    are saved, and only the two attention dots run again: the second term.
    """
    c = config
    tokens = c.seq * c.per_device_batch
    weights = 2 * tokens * (3 * c.emb * c.heads * c.head_dim + c.emb * c.mlp) * c.layers
    attention = 4 * c.heads * c.head_dim * c.seq**2 * c.per_device_batch * c.layers
    return attention + (weights if c.remat == "full" else 0)


def executed_flops(config: MaxTextConfig) -> float:
    """The FLOPs per device the step's dots run by MaxText's formula: attention whole, plus what remat recomputes.

    The module's attention dots compute every score, masked or not; from December 2023 the
    formula halves attention (causal), so that half is added back here.
    """
    c = config
    whole = 12 * c.heads * c.layers * c.head_dim * c.seq**2 * c.per_device_batch
    return c.model_tflops_per_device() * 1e12 + (whole / 2 if c.causal_flops else 0) + recomputed_flops(c)


@functools.lru_cache(maxsize=16)
def module_checks(row: StepRow) -> dict[str, float]:
    """netsim's FLOPs and HBM peak of the row's module beside the compiler's own figures (``NAME.xla.json``)."""
    import gzip
    import json

    from netsim.programs.hlo.flops import module_flops
    from netsim.programs.hlo.memory import module_memory
    from netsim.programs.hlo.text import parse_module

    with gzip.open(row.module, "rt", encoding="utf-8") as file:
        module = parse_module(file.read())
    xla = json.loads(row.module.with_name(f"{row.config.name}.xla.json").read_text())
    memory = xla["memory_analysis"]
    allocated = memory["argument_size_in_bytes"] + memory["output_size_in_bytes"] + memory["temp_size_in_bytes"] - memory["alias_size_in_bytes"]
    return {
        "flops_once": module_flops(module, "once"),
        "xla_flops": xla["cost_analysis"]["flops"],
        "flops_trips": module_flops(module, "trips"),
        "maxtext_remat": executed_flops(row.config),
        "hbm_peak": module_memory(module).peak_bytes,
        "memory_analysis": allocated,
        "arguments": memory["argument_size_in_bytes"],
        "laid_out": xla.get("buffer_assignment", {}).get("hbm_bytes", 0),
    }


def checks_section() -> str:
    """The modules' FLOPs and HBM against the compiler's figures and MaxText's formula."""
    checks = {row.config.name: module_checks(row) for row in ROWS if row.module.exists()}
    above = [(f["memory_analysis"] - f["laid_out"]) / 2**30 for f in checks.values() if f["laid_out"]]
    more = f"{min(above):.1f} to {max(above):.1f} GiB" if above else "more"
    sums = {
        generation: [checks[r.config.name]["memory_analysis"] / 2**30 for r in ROWS if r.config.name in checks and r.topology.startswith(generation + ":")]
        for generation in HBM_OFFERED_GIB
    }
    offered = "; ".join(
        f"{gib} GiB on {generation}, where it sums to {min(sums[generation]):.2f} to {max(sums[generation]):.2f} GiB"
        for generation, gib in HBM_OFFERED_GIB.items()
        if sums[generation]
    )
    text = (
        "FLOPs per device as XLA's cost analysis counts them (each loop body once) beside libtpu's `cost_analysis()`; "
        "the step's FLOPs (each loop by its trips) beside MaxText's formula plus what remat recomputes "
        "(`recomputed_flops` in `scripts/validation_steps.py`); the HBM peak of netsim's liveness pass beside the HBM "
        "the compiler's buffer assignment lays out (its allocations in HBM: the arguments and the temporaries' one "
        "allocation, read from `--xla_dump_to` by `scripts/make_step_modules.py`) and beside `memory_analysis()` "
        f"(arguments + outputs + temporaries - aliases), which comes out {more} above that layout. "
        f"That sum is not the HBM a chip holds: it exceeds the HBM libtpu 0.0.42.1 offers ({offered}; "
        "`scripts/tpu_hbm_available.py`) on every row the compiler accepted."
    )
    lines = [
        "### The modules' work and memory",
        "",
        textwrap.fill(text, 95, break_on_hyphens=False),
        "",
        "| model | FLOPs, loops once | cost_analysis() | ratio | FLOPs of the step | MaxText + remat | ratio "
        "| HBM peak | laid out | ratio | memory_analysis() | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, f in checks.items():
        lines.append(
            f"| {name} | {f['flops_once']:.4g} | {f['xla_flops']:.4g} | {f['flops_once'] / f['xla_flops']:.4f} | "
            f"{f['flops_trips']:.4g} | {f['maxtext_remat']:.4g} | {f['flops_trips'] / f['maxtext_remat']:.4f} | "
            f"{f['hbm_peak'] / 2**30:.2f} GiB | {_gib_ratio(f['hbm_peak'], f['laid_out'])} | "
            f"{f['memory_analysis'] / 2**30:.2f} GiB | {f['hbm_peak'] / f['memory_analysis']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def _gib_ratio(peak: float, laid_out: float) -> str:
    """The laid-out HBM and the peak's ratio to it, as two cells (dashes where the module has no report)."""
    return f"{laid_out / 2**30:.2f} GiB | {peak / laid_out:.3f}" if laid_out else "- | -"


def _published(name: str) -> float:
    """The published step time of the row named ``name``."""
    return next(row.config.step_time_s() for row in ROWS if row.config.name == name)


def mfu(row: StepRow, seconds: float) -> float:
    """MaxText's MFU of a step that takes ``seconds``."""
    return row.config.model_tflops_per_device() * 1e12 / (seconds * row.config.peak_flops)


NOT_COMPILED = {
    "22b_v4": "libtpu 0.0.42.1 refuses the step as written: 39.3 GiB of temporaries over the 30.75 GiB a v4 chip offers (MaxText's run fit, compiled in 2023)",
    "52b_v4": "libtpu 0.0.42.1 refuses the step as written: 35.48 GiB of temporaries over the 30.75 GiB a v4 chip offers (MaxText's run fit, compiled in 2023)",
}
"""Rows whose step the TPU compiler refuses as written, and why."""

RECORDED = STEPS / "step_times.json"
"""The simulated step times ``--simulate`` records (each a whole-step run of minutes), which the section reads."""


def simulate_rows(names: list[str] | None = None, in_order: bool = False) -> dict[str, dict[str, float]]:
    """Run the rows (nominal, then calibrated) and record their step times in :data:`RECORDED`.

    ``in_order``: instead, each row's nominal run with its sync collectives played in the order written
    (``in_order_nominal_s``, beside the row's other figures).
    """
    import json
    import subprocess

    from netsim.run import resolve_topology

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    recorded = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}
    for row in ROWS:
        if (names and row.config.name not in names) or not row.module.exists():
            continue
        if in_order:
            mine = {"in_order_nominal_s": step_time(row, "nominal", sync="in_order"), "in_order_commit": commit}
        else:
            efficiency = offered(calibrate(resolve_topology(row.topology, None), "calibrated")).compute_efficiency
            mine = {"efficiency": efficiency, "commit": commit}
            for mode in ("nominal", "calibrated"):  # (the time and its bound from one run)
                result = simulate(row, mode, None)
                extension = result.program.extension
                steady = extension is None or extension.steady or extension.every_trip_played
                mine[f"{mode}_s"] = result.time
                mine[f"{mode}_bound_s"] = (extension.bound_s if extension is not None else 0.0) if steady else None
                del result
            if row.derive:  # the efficiency at which its calibrated run would take the published time
                mine["own_efficiency"] = row_efficiency(row)
        recorded = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}  # (rows recorded meanwhile by other processes kept)
        kept = {k: v for k, v in recorded.get(row.config.name, {}).items() if k.startswith("in_order") != in_order}  # (the other kind's runs)
        recorded[row.config.name] = {**kept, **mine}
        RECORDED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        print(row.config.name, recorded[row.config.name], flush=True)
    return recorded


def section() -> str:
    """The "Whole steps" section of docs/validation.md: the recorded runs, the rows not yet simulated, the modules' checks."""
    import json

    recorded = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}
    lines = [
        "## Whole steps: MaxText's published MFU",
        "",
        *textwrap.fill(
            (
                f"Sources: {MAXTEXT_TABLE}; configs `MaxText/configs/largest_job/{{16b,32b,64b,128b}}.sh` and "
                "`MaxText/configs/1xv4-128.sh` and `1xv4-384.sh` of that commit. The v5p rows: `MaxText/configs/v5p/README.md` "
                f"at {MAXTEXT_V5P} (the first v5p table), configs `v5p/32b.sh` and `v5p/64b.sh` of that commit. "
                "Each model is written in plain JAX (`netsim/programs/hlo/maxtext.py`: the parallel decoder block, T5 "
                "relative-position biases (the v5p rows: rotary positions and a value norm, as MaxText's layer was by "
                "then), full remat (v5p: `minimal`, the projections saved), a scan over layers, AdamW; attention as plain "
                "dots where MaxText ran a flash kernel), compiled ahead of time with libtpu for its slice "
                "(`scripts/make_step_modules.py`, modules in `scenarios/programs/hlo/steps/`; the configs' "
                "`LIBTPU_INIT_ARGS` change nothing there: the 128B and the v5p 32B modules compiled with them are the same text) and "
                "simulated whole (`python scripts/validation_steps.py --simulate`, minutes a row). MFU is MaxText's own "
                "formula of the row's commit over the chip's peak (from December 2023 it counts attention causal, halved); "
                "the published step time is that formula's FLOPs over MFU x peak. Errors are netsim's step time against "
                "the published one. The four v5e rows are the derivation set for v5e's matmul efficiency; the v4 and v5p "
                'rows are held out: v4 and v5p have no measured terms of their own and run on v5e\'s ("Borrowed terms" '
                "above), the matmul efficiency derived here among them."
            ),
            95,
            break_on_hyphens=False,
        ).splitlines(),
        "",
        "| model | slice | role | published MFU | published step | nominal step | nominal MFU | error "
        "| calibrated step | calibrated MFU | error | own efficiency | run at |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in ROWS:
        c = row.config
        published = c.step_time_s()
        role = "derivation" if row.derive else "held out"
        head = f"| {c.name} | {row.topology} | {role} | {c.published_mfu:.2%} | {published:.2f} s"
        if c.name not in recorded:
            why = "not simulated yet" if row.module.exists() else NOT_COMPILED.get(c.name, "module not compiled yet")
            lines.append(f"{head} | {why} | | | | | | | |")
            continue
        run = recorded[c.name]
        cells = []
        for mode in ("nominal", "calibrated"):
            t = run[f"{mode}_s"]
            cells.append(f"{t:.2f} s | {mfu(row, t):.2%} | {t / published - 1:+.1%}")
        own = f"{run['own_efficiency']:.3f}" if "own_efficiency" in run else "(held out)"
        lines.append(f"{head} | {' | '.join(cells)} | {own} | {run['commit']} |")
    return "\n".join(lines) + "\n\n" + derivation_paragraph(recorded) + checks_section()


def derivation_paragraph(recorded: dict) -> str:
    """What the calibrated column used, and how it was derived (from the recorded runs)."""
    own = {name: run["own_efficiency"] for name, run in recorded.items() if "own_efficiency" in run}
    used = sorted({run.get("efficiency") for run in recorded.values()} - {None})
    bounds = [run.get(f"{mode}_bound_s", 0.0) for run in recorded.values() for mode in ("nominal", "calibrated")]
    changing = [f"{name} {mode}" for name, run in sorted(recorded.items()) for mode in ("nominal", "calibrated") if run.get(f"{mode}_bound_s", 0.0) is None]
    median = f"{statistics.median(own.values()):.3f}" if len(own) == 4 else f"not found yet ({len(own)} of the four simulated)"
    text = (
        "A row's *own efficiency* is the matmul efficiency at which its calibrated run would take the published time: "
        "the run's instructions moved to each efficiency tried (each takes max(MXU, HBM), its MXU time as the "
        "efficiency's inverse), bisected; a row slower than published at the ideal MXU has 1. v5e's matmul efficiency "
        f'is the median of the four, {median} (`CALIBRATIONS["tpu-v5e"]`), and the calibrated column is a run at '
        f"{' and '.join(f'{e:.3f}' for e in used) or 'it'}. Each step's two layer loops are played for a few trips and "
        "extended (docs/programs_limits.md); the trips of a 256-chip step stray by nanoseconds, which bounds each time "
        f"extended to +-{max([b for b in bounds if b is not None], default=0.0) * 1e6:.2g} us at most"
        + (f" ({', '.join(changing)}: still changing, extended from its last trips' time)." if changing else ".")
    )
    in_order = [
        f"{name} {run['in_order_nominal_s']:.2f} s ({run['in_order_nominal_s'] / _published(name) - 1:+.1%}, at {run['in_order_commit']})"
        for name, run in ((row.config.name, recorded.get(row.config.name, {})) for row in ROWS)
        if "in_order_nominal_s" in run
    ]
    note = (
        "Every row runs as `netsim program --hlo` runs a TPU-compiled module, its sync collectives overlapping the work "
        'after them that does not read them (docs/hlo.md, "Collectives written synchronous"). This matters most '
        "for the 128B row, which runs tensor parallelism over rows of 16 chips: its collective matmuls exchange "
        "activations with collective-permutes that libtpu writes for v5e as synchronous instructions before the "
        "partial matmuls that do not read them (for v5p it writes the same permutes as start/done pairs). Played in "
        "the order written (`--sync-collectives in_order`; `--simulate --in-order` here), they are exposed; the nominal runs recorded that way: "
        + ("; ".join(in_order) or "none")
        + "."
    )
    return "\n\n".join(textwrap.fill(t, 95, break_on_hyphens=False) for t in (text, note)) + "\n\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--derive", action="store_true", help="derive v5e's matmul efficiency from the four v5e rows and print it")
    parser.add_argument("--simulate", nargs="*", metavar="MODEL", help="simulate these rows (default: every row with a module) and record their times")
    parser.add_argument("--in-order", action="store_true", help="with --simulate: the nominal runs with sync collectives played in the order written")
    args = parser.parse_args()
    if args.simulate is not None:
        simulate_rows(args.simulate, args.in_order)
        return
    if args.derive:
        value, each = derive()
        print(f"v5e matmul efficiency: {value} (median of {each})")
        return
    print(section())


if __name__ == "__main__":
    main()

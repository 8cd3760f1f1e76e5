"""A training step's report as MaxText prints it: step time, TFLOP/s per device, MFU, tokens/s, and where the time went.

Reads a program's :class:`~netsim.result.Result` (an HLO module's, or any program's); never
simulates.

FLOPs per device
    With the transformer's shape (``model``: ``params``, ``layers``, ``heads``,
    ``head_dim``, ``seq``, ``per_device_batch``), MaxText's own formula of the time of its
    v5e table (``MaxText/train.py``, ``calculate_training_tflops``, 2023, after PaLM's
    appendix B): ``6 * params * seq * per_device_batch`` (the weights, forward and backward)
    ``+ 12 * heads * layers * head_dim * seq**2 * per_device_batch`` (attention, not halved
    for causality; ``causal_attention: true`` halves it, as MaxText's formula did from
    December 2023). Without it, the module's compute FLOPs as XLA's cost analysis counts
    them (``netsim.programs.hlo.flops``), each loop by its trips: remat's recomputation
    included, so MFU reads higher than MaxText's. The report says which.
TFLOP/s per device, MFU, tokens/s
    FLOPs per device over the step time; that over the chip's peak; with a model, the
    global batch's tokens (``per_device_batch * seq * devices``) over the step time.
Breakdown (on the critical device, the one whose compute ends last)
    compute, split by what bounds each step (``MXU``: its MXU FLOPs at peak x
    efficiency take longer than its bytes at HBM bandwidth; ``HBM``: the other way;
    ``given``: a time given, e.g. the compiler's cycles); communication ``hidden`` (in
    flight while the device computes) and ``exposed`` (in flight while it does not);
    ``DMA`` (its DMA engine's copies) busy and exposed (while neither compute nor
    communication runs); and ``idle``. compute + exposed communication + exposed DMA +
    idle = the time played.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from netsim.analysis.program_times import idle, overlap, union
from netsim.engine.columns import compute_columns
from netsim.network.calibration import in_force

__all__ = ["MODEL_FIELDS", "StepReport", "maxtext_flops", "step_report"]

MODEL_FIELDS = ("params", "layers", "heads", "head_dim", "seq", "per_device_batch")
"""A transformer's shape, as MaxText's FLOP formula takes it."""

MODEL_OPTIONS = ("causal_attention",)
"""What ``model`` may say besides its shape: ``causal_attention`` (true: attention's FLOPs halved)."""

MAXTEXT_FORMULA = "MaxText's formula (train.py, calculate_training_tflops, 2023): 6·params·seq·batch + 12·heads·layers·head_dim·seq²·batch"
MODULE_FLOPS = "the module's FLOPs as XLA's cost analysis counts them (loops by their trips; remat's recomputation included)"
TOP_FUSIONS = 10
"""How many instructions the report lists (the longest first; ``to_dict`` has them all)."""
COLUMNS = 80
"""The report's text is this many columns wide at most (long values wrap under their column), as the command line prints it."""


def maxtext_flops(model: dict[str, float]) -> float:
    """FLOPs per device of one training step by MaxText's formula (see the module docstring).

    Examples
    --------
    >>> m = {"params": 1e9, "layers": 2, "heads": 8, "head_dim": 128, "seq": 2048, "per_device_batch": 4}
    >>> maxtext_flops(m) == 6 * 1e9 * 2048 * 4 + 12 * 8 * 2 * 128 * 2048**2 * 4
    True
    >>> maxtext_flops({**m, "causal_attention": True}) == 6 * 1e9 * 2048 * 4 + 12 * 8 * 2 * 128 * 2048**2 * 4 / 2
    True
    """
    missing = [k for k in MODEL_FIELDS if k not in model]
    unknown = sorted(set(model) - set(MODEL_FIELDS) - set(MODEL_OPTIONS))
    if missing or unknown:
        problem = f"lacks {', '.join(missing)}" if missing else f"has unknown fields {', '.join(unknown)}"
        raise ValueError(f"model {problem}: give {', '.join(MODEL_FIELDS)}")
    for key in MODEL_FIELDS:
        value = model[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"model {key} must be a positive number, got {value!r}")
    causal = model.get("causal_attention", False)
    if not isinstance(causal, bool):
        raise ValueError(f"model causal_attention must be true or false, got {causal!r}")
    batch, seq = model["per_device_batch"], model["seq"]
    attention = 12 * model["heads"] * model["layers"] * model["head_dim"] * seq**2 * batch
    return 6 * model["params"] * seq * batch + (attention / 2 if causal else attention)


@dataclass(frozen=True)
class StepReport:
    """A step's report (see the module docstring); ``str()`` is the table ``netsim program`` prints."""

    name: str
    topology: str
    time_s: float
    played_s: float
    flops_per_device: float
    flops_source: str
    peak_flops: float | None
    tflops_per_device: float
    mfu: float | None
    tokens_per_s: float | None
    compute_mxu_s: float
    compute_hbm_s: float
    compute_given_s: float
    communication_exposed_s: float
    communication_hidden_s: float
    dma_s: float
    dma_exposed_s: float
    idle_s: float
    critical_device: int | None
    matmul_efficiency: float
    efficiency_source: str
    instructions: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Every field, as ``netsim program --json`` gives it under ``step``."""
        return asdict(self)

    def table(self) -> str:
        """The report as text: the figures MaxText prints, then the breakdown and the longest instructions."""

        def s(t: float) -> str:
            for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
                if abs(t) >= scale:
                    return f"{t / scale:.4g} {unit}"
            return f"{t / 1e-9:.4g} ns"

        def share(t: float) -> str:
            return f"{s(t)} ({100 * t / self.played_s:.1f} %)" if self.played_s > 0 else s(t)

        rows = [
            ("step time", s(self.time_s) + ("" if self.played_s == self.time_s else f" (loops extended; the breakdown is of the {s(self.played_s)} played)")),
            ("FLOPs per device", f"{self.flops_per_device:.4g}: {self.flops_source}"),
            ("TFLOP/s per device", f"{self.tflops_per_device:.4g}"),
            ("MFU", "-" if self.mfu is None else f"{100 * self.mfu:.2f} % of {self.peak_flops / 1e12:.4g} TFLOP/s"),
            ("tokens/s", "- (give the model's shape)" if self.tokens_per_s is None else f"{self.tokens_per_s:.4g}"),
            ("matmul efficiency", f"{self.matmul_efficiency:g} ({self.efficiency_source})"),
            ("compute, MXU-bound", share(self.compute_mxu_s)),
            ("compute, HBM-bound", share(self.compute_hbm_s)),
            *((("compute, time given", share(self.compute_given_s)),) if self.compute_given_s else ()),
            ("communication, exposed", share(self.communication_exposed_s)),
            ("communication, hidden", s(self.communication_hidden_s)),
            ("DMA", f"{s(self.dma_s)} busy, {s(self.dma_exposed_s)} exposed"),
            ("idle", share(self.idle_s)),
        ]
        width = max(len(label) for label, _ in rows)
        where = f"device {self.critical_device}" if self.critical_device is not None else "any device"
        lines = textwrap.wrap(f"step report: {self.name} on {self.topology} (breakdown on {where}, whose compute ends last)", COLUMNS, subsequent_indent="    ")
        for label, value in rows:  # each value wrapped under its column
            lines += textwrap.wrap(f"  {label:<{width}}  {value}", COLUMNS, subsequent_indent=" " * (width + 4), break_long_words=False, break_on_hyphens=False)
        if self.instructions:
            lines.append(f"  longest instructions ({min(TOP_FUSIONS, len(self.instructions))} of {len(self.instructions)}; all with --json):")
            lines.append(f"    {'instruction':<30} {'runs':>5} {'time':>10} {'bound':>6} {'FLOPs':>10} {'HBM bytes':>10}")  # 80 columns
            for i in self.instructions[:TOP_FUSIONS]:
                lines.append(f"    {i['name'][:30]:<30} {i['runs']:>5} {s(i['time_s']):>10} {i['bound']:>6} {i['flops']:>10.4g} {i['bytes']:>10.4g}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return self.table()


def _bound(step: Any, peak: float | None, hbm: float | None) -> str:
    if step.seconds is not None:
        return "given"
    mxu = step.flops / (peak * step.efficiency) if peak and step.flops else 0.0
    memory = step.bytes / hbm if hbm and step.bytes else 0.0
    return "MXU" if mxu > memory else "HBM"


def _module_flops(run: Any) -> tuple[float, dict[str, float]]:
    """The module's compute FLOPs per device (the run's ``flops``: loops by their trips) and each step label's."""
    by_label: dict[str, float] = {}
    module = getattr(run, "module", None)
    if module is None:  # a program file's run: its ops' FLOPs as lowered
        return float(sum(r.flops for r in run.lowered.ops if r.flops)), by_label
    seen: dict[str, int] = {}
    for step in module.steps:
        count = seen[step.label] = seen.get(step.label, 0) + 1
        by_label[step.label if count == 1 else f"{step.label}#{count}"] = float(getattr(step.op, "flops", 0))
    given = getattr(run, "flops", None)
    return float(given if given is not None else sum(by_label.values())), by_label


def step_report(result: Any, model: dict[str, float] | None = None) -> StepReport:
    """The step report of a program's result (see the module docstring).

    Parameters
    ----------
    result : Result
        A program's: :func:`~netsim.programs.hlo.run.run_hlo`, :func:`netsim.from_jax`,
        :func:`netsim.run_program`.
    model : dict, optional
        The transformer's shape (:data:`MODEL_FIELDS`), for MaxText's FLOP formula and
        tokens/s; default the run's own (an HLO program file's ``model:``), else none.

    Examples
    --------
    >>> from netsim.programs.hlo.run import run_hlo
    >>> r = step_report(run_hlo("scenarios/programs/hlo/tpu/v5e_4x4/mlp.txt", "tpu-v5e:4x4"))
    >>> dots, others = 2 * 2 * 64 * 1024 * 1024, 5 * 64 * 1024  # two dots; converts, maximums and the all-reduce's adds
    >>> r.flops_source.startswith("the module's"), r.flops_per_device == dots + others
    (True, True)
    >>> abs(r.compute_mxu_s + r.compute_hbm_s + r.communication_exposed_s + r.dma_exposed_s + r.idle_s - r.played_s) < 1e-15
    True
    """
    run = getattr(result, "program", None)
    if run is None or getattr(run, "lowered", None) is None:
        raise ValueError("a step report needs a program's result (netsim program, netsim.from_jax, run_hlo, netsim.run_program)")
    model = model if model is not None else getattr(run, "model", None)
    topology = result.topology_obj
    facts = topology.device(0)
    peak, hbm = facts.get("peak_flops"), facts.get("hbm_bandwidth_Bps")
    playback = result.leaves[0].playback
    lowered = run.lowered
    computes = lowered.schedule.computes
    started, ended = np.asarray(playback.computes.started_at, float), np.asarray(playback.computes.ended_at, float)
    columns = compute_columns(computes)
    device, unit, join = (np.asarray(columns[k], t) for k, t in (("device", np.int64), ("unit", np.int64), ("join", bool)))
    played = float(playback.time)
    work = ~join & (unit == 0)
    critical = None
    if work.any():
        last = np.full(int(device.max()) + 1, -np.inf)
        np.maximum.at(last, device[work], ended[work])
        critical = int(np.argmax(last))
    mine = np.flatnonzero(work & (device == critical)) if critical is not None else np.zeros(0, np.int64)
    split = {"MXU": 0.0, "HBM": 0.0, "given": 0.0}
    flops_of: dict[str, float]
    flops, flops_of = _module_flops(run)
    rows: dict[str, dict[str, Any]] = {}
    for j in mine.tolist():
        step = computes[j]
        bound, seconds = _bound(step, peak, hbm), float(ended[j] - started[j])
        split[bound] += seconds
        name = re.sub(r"(\[[\d,]*\])?(#\d+)?$", "", step.name)
        row = rows.setdefault(name, {"name": name, "runs": 0, "time_s": 0.0, "bound": bound, "flops": 0.0, "bytes": 0.0, "mxu_s": 0.0, "hbm_s": 0.0})
        row["runs"] += 1
        row["time_s"] += seconds
        row["flops"] += flops_of.get(step.name, step.flops)
        row["bytes"] += step.bytes
        row["mxu_s"] += step.flops / (peak * step.efficiency) if peak and step.seconds is None else 0.0
        row["hbm_s"] += step.bytes / hbm if hbm and step.seconds is None else 0.0
    for row in rows.values():
        row["bound"] = "given" if row["bound"] == "given" else "MXU" if row["mxu_s"] > row["hbm_s"] else "HBM"
    busy = union([(float(started[j]), float(ended[j])) for j in mine.tolist()])
    sent, arrived = np.asarray(playback.sent_at, float), np.asarray(playback.arrived_at, float)
    spans = [(r.transfers.start, r.transfers.stop) for r in lowered.ops if len(r.transfers)]
    comm = union([(float(sent[a:b].min()), float(arrived[a:b].max())) for a, b in spans])
    dma_steps = np.flatnonzero(~join & (unit == 1) & (device == critical)) if critical is not None else np.zeros(0, np.int64)
    dma = union([(float(started[j]), float(ended[j])) for j in dma_steps.tolist()])
    exposed = overlap(idle(busy, played), comm)
    free = idle(union(busy + comm), played)
    dma_exposed = overlap(free, dma)
    total_busy = sum(e - s for s, e in union(busy + comm + dma))
    efficiency = in_force(topology).compute_efficiency
    if model is not None:
        flops, source = maxtext_flops(model), MAXTEXT_FORMULA + (" (attention halved: causal)" if model.get("causal_attention") else "")
        tokens = model["per_device_batch"] * model["seq"] * result.n_devices / result.time if result.time > 0 else None
    else:
        source, tokens = MODULE_FLOPS if getattr(run, "module", None) is not None else "the program's FLOPs as lowered", None
    tflops = flops / result.time / 1e12 if result.time > 0 else 0.0
    return StepReport(
        name=result.scenario or "program",
        topology=result.topology,
        time_s=float(result.time),
        played_s=played,
        flops_per_device=float(flops),
        flops_source=source,
        peak_flops=peak,
        tflops_per_device=tflops,
        mfu=tflops * 1e12 / peak if peak else None,
        tokens_per_s=tokens,
        compute_mxu_s=split["MXU"],
        compute_hbm_s=split["HBM"],
        compute_given_s=split["given"],
        communication_exposed_s=exposed,
        communication_hidden_s=overlap(busy, comm),
        dma_s=sum(e - s for s, e in dma),
        dma_exposed_s=dma_exposed,
        idle_s=max(0.0, played - total_busy),
        critical_device=critical,
        matmul_efficiency=efficiency,
        efficiency_source=in_force(topology).source if efficiency != 1 else "the ideal model: peak FLOP/s (calibration: nominal, or none measured)",
        instructions=sorted(rows.values(), key=lambda r: -r["time_s"]),
    )

"""The JSON Schemas (draft 2020-12) of what ``netsim run --json``, ``estimate --json``, ``sweep --json`` and ``program --json`` print.

``netsim schema COMMAND`` prints one. Times are in seconds (``*_s``), sizes in bytes
(``*_bytes``), rates in bytes per second (``*_Bps``); a value that does not apply is
null, never NaN. The same name means the same thing in every command: ``n_devices`` is
a count, ``devices`` a list of per-device records, ``formula_source`` where a closed
form comes from.
"""

from __future__ import annotations

from typing import Any

__all__ = ["COLLECTIVE_NAMES", "COMPUTE_OP_NAMES", "HLO_COLLECTIVE_OPCODES", "OP_NAMES", "SCHEMAS", "schema"]

# The op registry's names (netsim.semantics.ops), written out so that `netsim schema` starts
# without NumPy, which the registry's layouts import; tests/test_cli_startup.py checks
# they are the registry's own, in its order.
COLLECTIVE_NAMES = ("all_gather", "psum_scatter", "psum", "all_to_all", "ppermute")
"""``COLLECTIVES``' keys."""
COMPUTE_OP_NAMES = ("matmul", "einsum", "compute")
"""``COMPUTE_OPS``' keys."""
OP_NAMES = (*COLLECTIVE_NAMES, *COMPUTE_OP_NAMES)
"""``OPS``' keys: every op a program runs, collectives first."""
HLO_COLLECTIVE_OPCODES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "ragged-all-to-all", "collective-permute")
"""``hlo_collectives()``' keys."""

_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _t(kind: str | list[str], description: str = "") -> dict[str, Any]:
    return {"type": kind, **({"description": description} if description else {})}


def _obj(properties: dict[str, Any], required: list[str] | None = None, description: str = "") -> dict[str, Any]:
    return {
        "type": "object",
        **({"description": description} if description else {}),
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


def _list(items: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"type": "array", "items": items, **({"description": description} if description else {})}


_INT, _NUM, _STR = _t("integer"), _t("number"), _t("string")
_COLLECTIVE = {"enum": list(COLLECTIVE_NAMES), "description": "the collective, as the op registry names it (netsim.semantics.ops)"}
_NNUM, _NSTR = _t(["number", "null"]), _t(["string", "null"])
_SYMMETRY = _obj({"axes": _list(_INT), "devices_played": _INT, "devices": _INT, "each_stands_for": _INT, "transfers_played": _INT})
_ESTIMATE_KIND = {
    "enum": ["exact", "lower_bound", "upper_bound", "none"],
    "description": "what the closed form is to the simulated time: exact, a lower or an upper bound, or none",
}

_CALIBRATION = _obj(
    {
        "mode": {"enum": ["nominal", "calibrated"], "description": "calibration: the ideal model, or the chips' terms applied"},
        "terms": _t("string", "whose terms are in force: measured, borrowed from GENERATION (no public measurement of these chips), or none"),
        "link_efficiency": _NUM,
        "collective_overhead_s": _t("number", "the fixed cost per collective"),
        "compute_efficiency": _NUM,
        "source": _t("string", "where the terms come from (docs/validation.md)"),
    },
    required=["mode", "terms", "link_efficiency", "collective_overhead_s", "compute_efficiency"],
    description="the calibration the run used",
)

_CLOSED_FORM = {
    "estimate_s": _t(["number", "null"], "the algorithm's closed-form (alpha-beta) time; null where there is none"),
    "latency_term_s": _NNUM,
    "bandwidth_term_s": _NNUM,
    "fixed_cost_s": _t("number", "the fixed cost per collective in estimate_s, a term of its own (calibrated runs only)"),
    "formula": _NSTR,
    "formula_source": _t(["string", "null"], "where the closed form comes from"),
    "no_closed_form": _t(["string", "null"], "why there is no closed form, when there is none"),
    "regime": _t(["string", "null"], "latency-bound or bandwidth-bound"),
    "crossover_bytes_per_device": _t(["number", "null"], "payload per device where the latency and bandwidth terms are equal"),
    "book_estimate_s": _t(["number", "null"], "the scaling book's estimate"),
    "book_formula": _NSTR,
    "book_bandwidth_s": _t(["number", "null"], "the scaling book's bandwidth figure V/(W_ici·N_axes): not a bound, it counts a member's own share"),
    "bound_s": _t(["number", "null"], "a lower bound for any algorithm, α + R/(L·B): R bytes a member must receive over L links"),
    "estimate_kind": _ESTIMATE_KIND,
    "estimate_bounds": _t(["string", "null"], "what a bound bounds, in words; null for an exact estimate"),
}
_OPTIONAL: set[str] = {"fixed_cost_s", "calibration"}  # every run and estimate says what its estimate is; a calibrated one its fixed cost too

_DEVICE = _obj(
    {
        "device": _INT,
        "name": _STR,
        "bytes_sent": _INT,
        "bytes_received": _INT,
        "finish_s": _t("number", "when its last chunk arrived"),
        "input_bytes": _INT,
        "output_bytes": _INT,
        "peak_bytes": _t("integer", "the most it held at once"),
        "peak_in_flight_bytes": _t("integer", "receive buffers of chunks on their way, at most"),
    }
)
_LINK = _obj(
    {
        "link": _list({"type": ["integer", "array"]}, "[source, destination, [axis, direction]]"),
        "name": _t("string", "e.g. 3->4"),
        "bytes": _INT,
        "messages": _INT,
        "busy_s": _NUM,
        "utilisation": _t("number", "busy time over the run's time"),
        "longest_queue": _INT,
        "wait_s": _t("number", "time messages waited for the link"),
    }
)
_STEP = _obj({"leaf": _INT, "step": _INT, "phase": _STR, "start_s": _NNUM, "end_s": _NNUM, "first_done_s": _NNUM, "straggler": _t(["integer", "null"])})
_STEP_TIMING = _obj({"leaf": _INT, "step": _INT, "phase": _STR, "device": _INT, "start_s": _NNUM, "end_s": _NNUM})

_RUN_PROPERTIES: dict[str, Any] = {
    "scenario": _NSTR,
    "collective": _COLLECTIVE,
    "topology": _STR,
    "n_devices": _t("integer", "devices on the topology"),
    "groups": _list(_list(_INT), "the device groups, in group order"),
    "axes": _t(["array", "null"], "the mesh axes the collective runs over"),
    "group_size": _INT,
    "algorithm": _STR,
    "engine": {"enum": ["processes", "fast"]},
    "bytes_per_device": _INT,
    "total_bytes": _INT,
    "time_s": _t("number", "the simulated time"),
    "algbw_Bps": _NUM,
    "busbw_Bps": _NUM,
    "steps": _list(_STEP, "when each algorithm step started and when its first and last device were done"),
    "transfers": _INT,
    "verified": _t("boolean", "the output equals the NumPy reference of JAX's semantics"),
    "faults": _list(_STR),
    "stragglers": {"type": "object", "additionalProperties": _NUM, "description": "device -> late start, seconds"},
    **_CLOSED_FORM,
    "ratio": _t(["number", "null"], "time_s / estimate_s"),
    "layout": _STR,
    "bound_fraction": _t(["number", "null"], "bound_s / time_s: how close the run comes to the bound (at most 1)"),
    "why": _t(["string", "null"], "why the time differs from the closed form, when it does by more than 1 %"),
    "link_latency_s": _NNUM,
    "link_bandwidth_Bps": _NNUM,
    "verification": _STR,
    "output_sha256": _NSTR,
    "output_sha256_of": _t("string", "what output_sha256 hashed: every output byte, or what defines a lazy output"),
    "critical_links": _list(
        _obj({"link": _STR, "crossings": _INT, "queued": _t("integer", "crossings that waited for the link rather than for their data")}),
        "the critical path's link crossings in order, repeated crossings of one link merged",
    ),
    "memory": {**_obj({k: _INT for k in ("input_bytes", "output_bytes", "peak_bytes", "peak_in_flight_bytes")}), "type": ["object", "null"]},
    "critical_path": _obj(
        {
            "transfers": _t("integer", "transfers with a step on the critical path (the crossings critical_links lists)"),
            "hops": _t("integer", "link crossings on the critical path"),
            "latency_s": _NUM,
            "transmission_s": _NUM,
            "queueing_s": _NUM,
            "straggle_s": _NUM,
            "queued_on": _list(_obj({"link": _STR, "wait_s": _NUM})),
        }
    ),
    "totals": _obj({"transfers": _INT, "transfer_bytes": _INT, "hop_bytes": _INT, "link_bytes": _INT, "max_route_hops": _INT}),
    "devices": _list(_DEVICE, "every device"),
    "links": _list(_LINK, "every link direction, busiest first"),
    "step_timings": _list(_STEP_TIMING, "every (step, device)"),
    "step_timings_note": _STR,
    "calibration": _CALIBRATION,
}

RUN = {
    "$schema": _DIALECT,
    "title": "netsim run --json",
    **_obj(_RUN_PROPERTIES, [k for k in _RUN_PROPERTIES if k not in _OPTIONAL and k not in ("step_timings_note", "calibration")]),
}

_ALGORITHM = _obj({"algorithm": _STR, **_CLOSED_FORM}, ["algorithm", *(k for k in _CLOSED_FORM if k not in _OPTIONAL)])
ESTIMATE = {
    "$schema": _DIALECT,
    "title": "netsim estimate --json",
    **_obj(
        {
            "scenario": _STR,
            "collective": _COLLECTIVE,
            "n_devices": _INT,
            "layout": _STR,
            **_ALGORITHM["properties"],
            "algorithms": _list(_ALGORITHM, "every algorithm for the same collective and layout"),
            "calibration": _obj({k: v for k, v in _CALIBRATION["properties"].items() if k != "source"}, description="the calibration the closed forms take"),
        },
        ["scenario", "collective", "n_devices", "layout", *_ALGORITHM["required"], "algorithms", "calibration"],
    ),
}

_ROW = {
    "type": "object",
    "description": "one point of the study: point, the swept fields (as labelled, text) and what was measured",
    "properties": {
        "point": _INT,
        "collective": _NSTR,
        "algorithm": _NSTR,
        "topology": _NSTR,
        "n_devices": _t(["integer", "null"]),
        "group_size": _t(["integer", "null"]),
        "bytes_per_device": _t(["integer", "null"]),
        "total_bytes": _t(["integer", "null"]),
        "time_s": _NNUM,
        "estimate_s": _NNUM,
        "ratio": _NNUM,
        "regime": _NSTR,
        "why": _NSTR,
        "algbw_Bps": _NNUM,
        "busbw_Bps": _NNUM,
        "verified": _t(["boolean", "null"]),
        "error": _t(["string", "null"], "why the point is not a valid scenario, or null"),
    },
    "required": ["point", "time_s", "estimate_s", "ratio", "error"],
    "additionalProperties": {"type": ["string", "null"], "description": "a swept field's label"},
}
_PROGRAM_ROW = {
    "type": "object",
    "description": "one point of a study of a program: point, the swept fields (as labelled, text) and the program's times",
    "properties": {
        "point": _INT,
        "topology": _NSTR,
        "n_devices": _t(["integer", "null"]),
        "time_s": _NNUM,
        "compute_s": _NNUM,
        "communication_s": _NNUM,
        "exposed_communication_s": _NNUM,
        "peak_flops": _NNUM,
        "link_bandwidth_Bps": _NNUM,
        "verified": _t(["boolean", "null"]),
        "error": _t(["string", "null"], "why the point is not a valid program, or null"),
    },
    "required": ["point", "time_s", "compute_s", "communication_s", "exposed_communication_s", "error"],
    "additionalProperties": {"type": ["string", "null"], "description": "a swept field's label"},
}
SWEEP = {
    "$schema": _DIALECT,
    "title": "netsim sweep --json",
    "type": "array",
    "items": {"anyOf": [_ROW, _PROGRAM_ROW]},
    "description": "one row per point, as results.csv (a study of a scenario, or of a program)",
}

_OP = _obj(
    {
        "name": _STR,
        "op": {"enum": list(OP_NAMES), "description": "a collective or compute op of the op registry (an HLO instruction's step is one of them)"},
        "start_s": _t("number", "its first send or compute step on `device` (the critical device), else on any device"),
        "end_s": _t("number", "its last arrival or compute step on `device`, else on any device"),
        "time_s": _t("number", "the longest it took on one device"),
        "estimate_s": _t(["number", "null"], "its closed form: the roofline per device, or the collective's; null where there is none"),
        "bound": {"enum": ["compute", "HBM", "ICI", "DCN", "given"], "description": "what bounds it (DCN: a collective across slices)"},
        "estimate_kind": _ESTIMATE_KIND,
        "algorithm": _t(["string", "null"], "a collective's algorithm; null for compute"),
        "bytes_per_device": _t(["integer", "null"], "a collective's input per device; null for compute"),
        "why": _t("string", "one line on why it took what it took, against its closed form"),
        "device": _t(["integer", "null"], "the device start_s and end_s are on: the one whose compute ends last (null: the op does nothing there)"),
        "first_start_s": _t("number", "its first step on any device"),
        "last_end_s": _t("number", "its last step on any device"),
    }
)
_HLO_COLLECTIVE = _obj(
    {
        "hlo_name": _t("string", "the instruction's name in the module"),
        "op": {"enum": list(HLO_COLLECTIVE_OPCODES), "description": "the HLO collective, e.g. all-gather"},
        "shape": _t("array", "one device's operand dims (a list of them for a tuple or combined form)"),
        "dtype": _t(["string", "array"], "the HLO element type, e.g. bf16 (a list for several operands)"),
        "bytes": _t("integer", "bytes each device puts in"),
        "group_size": _INT,
        "groups": _t("array", "the first groups (module device ids), or source-target pairs for a permute"),
        "count": _t("integer", "executions, loops unrolled"),
        "time_s": _t("number", "all executions, each from its first send to its last arrival"),
        "estimate_s": _t(["number", "null"], "their closed forms, summed; null where there is none"),
        "algorithm": _t(["string", "null"], "netsim's algorithm"),
        "compiler_algorithm": _t(["string", "null"], "the TPU compiler's collective_algorithm_config, when the module has one"),
        "played_with": _t("string", "whose algorithm played it: compiler (the TPU compiler's, where named) or netsim"),
        "other_time_s": _t(["number", "null"], "its time with the other choice (netsim's own beside the compiler's), when compared"),
        "axes": _t("array", "the mesh axes its groups are the devices along"),
        "asynchronous": _t("boolean", "an async start/done pair"),
        "line": _INT,
        "note": _STR,
        "estimate_kind": _ESTIMATE_KIND,
        "why": _t("string", "one line on why its first execution took what it took, against its closed form"),
    }
)
_HLO = _obj(
    {
        "file": _STR,
        "module": _STR,
        "devices": _INT,
        "placement": _t("string", "how device ids were placed on chips"),
        "compiler": _t("string", "which compiler made the module (the TPU's, with libtpu's version, or XLA's CPU compiler and what its module lacks)"),
        "dtypes": _t("string", "which dtypes were timed: as compiled, or source (the arguments' dtype, for a CPU-compiled module)"),
        "sync_collectives": _t("string", "how sync collectives played: overlap (the work after one that does not read it ran beside it) or in_order"),
        "groups_matched_against": _STR,
        "clock_hz": _t(["number", "null"], "the clock that times estimated_cycles"),
        "algorithms": _t("string", "whose algorithms played the collectives: compiler or netsim"),
        "compute_unknown": _t("integer", "compute steps not timed: the chip has no peak_flops or hbm_bandwidth and no clock was given"),
        "unmodelled": _list(_obj({"hlo_name": _STR, "op": _STR, "line": _INT, "reason": _STR}), "instructions not timed"),
        "axis_bytes": {"type": "object", "additionalProperties": _INT, "description": "mesh axes -> bytes the busiest device receives"},
        "roofline_ici_bytes": {"type": ["object", "null"], "description": "jax.experimental.roofline's ICI bytes per mesh axis, where it applies"},
        "loops_extended": {
            "anyOf": [
                {"type": "null"},
                _obj(
                    {
                        "loops": _list(
                            _obj({"hlo_name": _STR, "line": _INT, "trips": _INT, "played": _INT, "per_trip_s": _t("number", "what each further trip adds")})
                        ),
                        "played_time_s": _t("number", "the time of the trips played (the statistics are that run's)"),
                        "time_s": _t("number", "the time with every trip: the run's time_s"),
                        "steady": _t("boolean", "whether each trip had come to add the same time (or the same every period)"),
                        "runs": _INT,
                        "pattern": _t("string", "one long loop: steady, periodic or played (every trip played)"),
                        "period": _t("integer", "one long loop: the period of its per-trip times in trips"),
                        "period_s": _t("number", "one long loop: what each further period adds"),
                        "within_s": _t("number", "0: the trips fit exactly; else how far a trip's time strayed from steady (nanoseconds a trip)"),
                        "bound_s": _t("number", "how far the extended time may be off: within_s for every trip extended"),
                    },
                    required=["loops", "played_time_s", "time_s", "steady", "runs"],
                ),
            ],
            "description": "while loops of many trips: a few played, the rest extended at the steady per-trip time (null: every trip played)",
        },
    },
    description="an HLO module's facts (--hlo and hlo: files only)",
)
_STEP_REPORT = _obj(
    {
        "name": _STR,
        "topology": _STR,
        "time_s": _t("number", "the step's simulated time"),
        "played_s": _t("number", "the time of the run played (less than time_s when long loops were extended)"),
        "flops_per_device": _t("number", "the step's FLOPs per device (see flops_source)"),
        "flops_source": _t("string", "MaxText's formula (a model's shape was given) or the module's FLOPs as XLA counts them"),
        "peak_flops": _NNUM,
        "tflops_per_device": _t("number", "flops_per_device / time_s, in TFLOP/s"),
        "mfu": _t(["number", "null"], "tflops_per_device over the chip's peak (a fraction)"),
        "tokens_per_s": _t(["number", "null"], "the global batch's tokens per second (a model's shape given)"),
        "compute_mxu_s": _t("number", "compute steps whose MXU time exceeds their HBM time, on the critical device"),
        "compute_hbm_s": _t("number", "compute steps whose HBM time is the longer"),
        "compute_given_s": _t("number", "compute steps with a given time (estimated cycles)"),
        "communication_exposed_s": _t("number", "collectives in flight while the critical device does not compute"),
        "communication_hidden_s": _t("number", "collectives in flight while it computes"),
        "dma_s": _t("number", "its DMA engine's busy time (copies, prefetches)"),
        "dma_exposed_s": _t("number", "DMA while neither compute nor communication runs"),
        "idle_s": _t("number", "time with nothing running there"),
        "critical_device": _t(["integer", "null"], "the device whose compute ends last"),
        "matmul_efficiency": _t("number", "the fraction of peak FLOP/s the MXU time counts (1 under calibration: nominal)"),
        "efficiency_source": _STR,
        "instructions": _list(
            _obj(
                {
                    "name": _STR,
                    "runs": _INT,
                    "time_s": _NUM,
                    "bound": {"enum": ["MXU", "HBM", "given"]},
                    "flops": _NUM,
                    "bytes": _NUM,
                    "mxu_s": _NUM,
                    "hbm_s": _NUM,
                }
            ),
            "the critical device's compute instructions, the longest first",
        ),
    },
    description="the step report, as MaxText prints it (--hlo and hlo: files only)",
)
_TRIPS = _obj(
    {
        "trips": _INT,
        "played": _t("integer", "the trips of the run reported"),
        "pattern": _t("string", "steady, periodic or played (every trip played)"),
        "period": _t("integer", "the period of the per-trip times in trips (1: steady; 0: every trip played)"),
        "period_s": _t("number", "what each further period adds"),
        "per_trip_s": _t("number", "what a further trip adds, on average over a period"),
        "played_time_s": _NUM,
        "time_s": _NUM,
        "runs": _INT,
    }
)
_REPEATS = _obj(
    {
        "blocks": _list(_TRIPS, "per repeat: block, in the order written"),
        "played_time_s": _t("number", "the time of the run reported (its statistics are the report's)"),
        "time_s": _t("number", "the time with every trip: the run's time_s"),
        "runs": _INT,
    }
)
PROGRAM = {
    "$schema": _DIALECT,
    "title": "netsim program --json",
    **_obj(
        {
            "scenario": _t("string", "the program's name, as run --json names a scenario"),
            "topology": _STR,
            "time_s": _t("number", "the program's simulated time"),
            "compute_s": _t("number", "the busiest device's compute busy time (not its launches of collectives)"),
            "launches_s": _t("number", "the most time one device spent launching collectives: a calibrated run's fixed cost per collective (0 if nominal)"),
            "calibration": _CALIBRATION,
            "communication_s": _t("number", "time with at least one collective in flight"),
            "exposed_communication_s": _t("number", "time the critical device's compute unit sat idle while a collective was in flight"),
            "critical_device": _t(["integer", "null"], "the device whose compute unit finished last"),
            "verified": _t("boolean", "values checked against NumPy's unsharded computation"),
            "verification": _STR,
            "devices_compute": _obj(
                {"peak_flops": _NNUM, "hbm_bandwidth_Bps": _NNUM, "compute_efficiency": _t("number", "the fraction of the peak FLOP/s the roofline counts")},
                required=["peak_flops", "hbm_bandwidth_Bps"],
            ),
            "why": _STR,
            "ops": _list(_OP),
            "memory": _obj(
                {
                    "peak_bytes": _t("integer", "the most bytes one device's arrays hold at once"),
                    "peak_at": _t("string", "the op at that peak, or start"),
                    "capacity_bytes": _t(["integer", "null"], "one device's HBM capacity"),
                    "fits": _t(["boolean", "null"], "whether the peak fits (null: capacity unknown)"),
                    "note": _t("string", "e.g. does not fit: 32 GiB on a 16 GiB chip"),
                    "parameter_bytes": _t("integer", "an HLO module's parameters (held for the whole run)"),
                    "output_bytes": _t("integer", "an HLO module's outputs (each from its definition to the end)"),
                    "temporary_bytes": _t("integer", "an HLO module's temporaries live at the peak"),
                    "live_bytes": _t("integer", "an HLO module's most bytes live at once (peak_bytes adds the gaps of the compiler's heap)"),
                    "order": _t("string", "an HLO module's instruction order: scheduled (the compiler's) or written"),
                    "items": _list(
                        _obj({"name": _t("string", "the array, or the instruction defining the buffer (60 characters at most)"), "bytes": _INT, "kind": _STR}),
                        "what is held at the peak, the largest first",
                    ),
                },
                required=["peak_bytes", "peak_at", "capacity_bytes", "fits", "note", "items"],
                description="per device (every device holds shards of the same shapes): a program's arrays, or an HLO module's buffers",
            ),
            "checks": {
                "type": "object",
                "description": "array -> its largest difference from the reference (relative to its largest value) and the tolerance",
                "additionalProperties": _obj({"difference": _NUM, "tolerance": _NUM}),
            },
            "devices": _list(_obj({"device": _INT, "compute_busy_s": _NUM, "link_busy_s": _t("number", "busy time of the links leaving it")})),
            "collectives": _list(_HLO_COLLECTIVE, "an HLO module's collective instructions, slowest first (--hlo and hlo: files only)"),
            "hlo": _HLO,
            "step": _STEP_REPORT,
            "estimate": _obj(
                {
                    "transfers": _INT,
                    "compute_steps": _INT,
                    "dependencies": _t("integer", "dependency entries of transfers and compute steps"),
                    "link_crossings": _t("integer", "links crossed, over all transfers"),
                    "memory_bytes": _t("integer", "the memory the run was estimated to need, checked before it played"),
                },
                description="the before-run estimate (of the last run played, for an HLO module with long loops)",
            ),
            "repeats": {"anyOf": [{"type": "null"}, _REPEATS], "description": "repeat: blocks extended past the trips played (null: every trip played)"},
            "symmetry": {"anyOf": [{"type": "null"}, _SYMMETRY], "description": "played on representatives (null: every device played)"},
        },
        required=[
            "scenario",
            "topology",
            "time_s",
            "compute_s",
            "communication_s",
            "exposed_communication_s",
            "critical_device",
            "verified",
            "verification",
            "devices_compute",
            "why",
            "ops",
            "checks",
            "devices",
            "estimate",
        ],
    ),
}

SCHEMAS = {"run": RUN, "estimate": ESTIMATE, "sweep": SWEEP, "program": PROGRAM}
"""Command -> the JSON Schema of what its ``--json`` prints."""


def schema(command: str) -> dict[str, Any]:
    """The JSON Schema of ``netsim COMMAND --json``.

    Examples
    --------
    >>> schema("estimate")["properties"]["n_devices"]
    {'type': 'integer'}
    >>> schema("explain")
    Traceback (most recent call last):
    ...
    ValueError: no JSON schema for 'explain': use one of run, estimate, sweep, program
    """
    if command not in SCHEMAS:
        raise ValueError(f"no JSON schema for {command!r}: use one of {', '.join(SCHEMAS)}")
    return SCHEMAS[command]

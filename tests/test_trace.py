"""The Chrome/Perfetto trace: a strict trace-event schema, nesting, flows, and every slice against the run.

Perfetto's own trace processor (``pip install perfetto``) needs a shell binary that it
downloads at run time, which this environment cannot reach, so the trace is checked
here with a strict JSON Schema of the trace-event format (jsonschema) plus the rules a
viewer relies on: slices of one thread nest, every flow starts, steps and ends inside
a slice of its thread.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict

import jsonschema
import numpy as np
import pytest
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app
from netsim.cli.trace import chrome_trace

ALPHA, B = 1e-6, 45e9
runner = CliRunner()

_COMMON = {"pid": {"type": "integer", "minimum": 0}, "tid": {"type": "integer", "minimum": 0}}
_TIME = {"type": "number", "minimum": 0}
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["traceEvents"],
    "additionalProperties": False,
    "properties": {
        "traceEvents": {
            "type": "array",
            "items": {
                "oneOf": [
                    {  # complete event: a slice
                        "type": "object",
                        "required": ["ph", "name", "cat", "ts", "dur", "pid", "tid"],
                        "additionalProperties": False,
                        "properties": {
                            "ph": {"const": "X"},
                            "name": {"type": "string", "minLength": 1},
                            "cat": {"type": "string", "minLength": 1},
                            "ts": _TIME,
                            "dur": _TIME,
                            "args": {"type": "object"},
                            **_COMMON,
                        },
                    },
                    {  # metadata: names and sort order of processes and threads
                        "type": "object",
                        "required": ["ph", "name", "pid", "tid", "args"],
                        "additionalProperties": False,
                        "properties": {
                            "ph": {"const": "M"},
                            "name": {"enum": ["process_name", "process_sort_index", "thread_name", "thread_sort_index"]},
                            "args": {
                                "type": "object",
                                "minProperties": 1,
                                "maxProperties": 1,
                                "properties": {"name": {"type": "string", "minLength": 1}, "sort_index": {"type": "integer"}},
                                "additionalProperties": False,
                            },
                            **_COMMON,
                        },
                    },
                    {  # flow start and step
                        "type": "object",
                        "required": ["ph", "name", "cat", "id", "ts", "pid", "tid"],
                        "additionalProperties": False,
                        "properties": {
                            "ph": {"enum": ["s", "t"]},
                            "name": {"type": "string"},
                            "cat": {"type": "string"},
                            "id": {"type": ["integer", "string"]},
                            "ts": _TIME,
                            **_COMMON,
                        },
                    },
                    {  # flow end, bound to the enclosing slice
                        "type": "object",
                        "required": ["ph", "name", "cat", "id", "ts", "pid", "tid", "bp"],
                        "additionalProperties": False,
                        "properties": {
                            "ph": {"const": "f"},
                            "bp": {"const": "e"},
                            "name": {"type": "string"},
                            "cat": {"type": "string"},
                            "id": {"type": ["integer", "string"]},
                            "ts": _TIME,
                            **_COMMON,
                        },
                    },
                ]
            },
        },
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object"},
    },
}


def parse(trace: dict) -> dict:
    """Validate a trace strictly and index it: slices per thread, flows per id, thread names."""
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(trace, SCHEMA, cls=jsonschema.Draft202012Validator)
    json.loads(json.dumps(trace, allow_nan=False))  # strict JSON: no NaN or infinity
    names, slices, flows = {}, defaultdict(list), defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] in ("process_name", "thread_name"):
            names[(e["name"], e["pid"], e["tid"] if e["name"] == "thread_name" else None)] = e["args"]["name"]
        elif e["ph"] == "X":
            slices[(e["pid"], e["tid"])].append(e)
        elif e["ph"] in "stf":
            flows[e["id"]].append(e)
    for track, items in slices.items():  # slices of one thread must nest (here: never overlap)
        items.sort(key=lambda e: (e["ts"], -e["dur"]))
        for a, b in itertools.pairwise(items):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-9 * max(1.0, b["ts"]), (track, a, b)
        assert ("thread_name", *track) in names, track
        assert ("process_name", track[0], None) in names, track
    for flow_id, events in flows.items():
        kinds = [e["ph"] for e in events]
        assert kinds[0] == "s" and kinds[-1] == "f" and set(kinds[1:-1]) <= {"t"}, (flow_id, kinds)
        assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
        for e in events:  # bound to a slice of the same thread that encloses it
            assert any(s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in slices[(e["pid"], e["tid"])]), e
    return {"names": names, "slices": slices, "flows": flows}


def transfer_and_hop_slices(trace: dict) -> tuple[list[dict], list[dict]]:
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    return [e for e in events if e["cat"] == "transfer"], [e for e in events if e["cat"] == "hop"]


@pytest.mark.parametrize("algorithm, expected", [("ring", 4 * 3), ("bidirectional_ring", 2 * 4 * 3), ("bidirectional_halfway", 4 * 3)])
def test_all_gather_on_a_ring_of_4_has_one_slice_per_transfer_and_per_hop(algorithm, expected):
    s = 4096
    result = netsim.all_gather(np.zeros((4, s // 4), np.float32), algorithm=algorithm)
    trace = chrome_trace(result)
    parsed = parse(trace)
    transfers, hops = transfer_and_hop_slices(trace)
    assert len(transfers) == expected  # every member's block reaches every other member: n(n-1) block moves
    assert len(hops) == expected  # ring neighbours: one hop each
    assert len(parsed["flows"]) == expected
    playback = result.leaves[0].playback
    for e in transfers:
        i = e["args"]["transfer"]
        assert e["args"]["bytes"] == playback.nbytes[i]
        assert e["ts"] == pytest.approx(playback.sent_at[i] * 1e6, rel=1e-12, abs=1e-12)
        assert e["dur"] == pytest.approx((playback.arrived_at[i] - playback.sent_at[i]) * 1e6, rel=1e-12)
        assert (e["args"]["src"], e["args"]["dst"]) == (result.leaves[0].schedule.transfers[i].src, result.leaves[0].schedule.transfers[i].dst)
        assert parsed["names"][("process_name", e["pid"], None)] == f"device {e['args']['src']}"
    for e, hop in zip(sorted(hops, key=lambda e: (e["ts"], e["args"]["transfer"])), sorted(playback.hops, key=lambda h: (h.start, h.transfer)), strict=True):
        assert e["args"]["transfer"] == hop.transfer
        assert e["args"]["bytes"] == playback.nbytes[hop.transfer]
        assert e["ts"] == pytest.approx(hop.start * 1e6, rel=1e-12, abs=1e-12)
        assert e["dur"] == pytest.approx((hop.end - hop.start) * 1e6, rel=1e-12)
        assert parsed["names"][("thread_name", e["pid"], e["tid"])] == result.topology_obj.link_name(hop.link) == e["args"]["link"]


def test_ring_slices_sit_at_the_closed_form_times():
    n, s = 4, 2**16
    trace = chrome_trace(netsim.all_gather(np.zeros((n, s // 4), np.float32), algorithm="ring"))
    transfers, hops = transfer_and_hop_slices(trace)
    step = ALPHA + s / B
    for e in transfers:
        assert e["ts"] == pytest.approx(e["args"]["step"] * step * 1e6, rel=1e-9, abs=1e-9)
        assert e["dur"] == pytest.approx(step * 1e6, rel=1e-9)
        assert e["args"]["bytes"] == s
    for e in hops:
        assert e["dur"] == pytest.approx(s / B * 1e6, rel=1e-9)


def test_multi_hop_chunks_have_flows_through_every_link():
    result = netsim.all_gather(np.zeros((4, 2**18), np.float32), axis_index_groups=[[0, 2], [1, 3]], algorithm="ring")
    trace = chrome_trace(result)
    parsed = parse(trace)
    transfers, hops = transfer_and_hop_slices(trace)
    assert len(transfers) == 4 and len(hops) == 8
    for events in parsed["flows"].values():
        assert [e["ph"] for e in events] == ["s", "t", "f"]  # device, first link, second link
    names = {parsed["names"][("thread_name", e["pid"], e["tid"])] for e in hops}
    assert names == {"0->1", "1->2", "2->3", "3->0"}


def test_overlapping_sends_get_lanes_and_pytrees_follow_each_other():
    x = np.zeros((4, 64), np.float32)
    result = netsim.all_gather({"a": x, "b": x}, algorithm="bidirectional_ring")
    trace = chrome_trace(result)
    parsed = parse(trace)
    transfers, _ = transfer_and_hop_slices(trace)
    assert len(transfers) == 2 * 2 * 4 * 3
    first_leaf = result.leaves[0].playback.time
    assert min(e["ts"] for e in transfers if e["args"]["leaf"] == 1) == pytest.approx(first_leaf * 1e6, rel=1e-12)
    lanes = {(pid, tid) for pid, tid in parsed["slices"] if parsed["names"][("process_name", pid, None)] == "device 0"}
    assert len(lanes) == 2  # both halves leave at once, one each way


def test_torus_names_devices_and_links_by_coordinates():
    trace = chrome_trace(
        netsim.psum(np.ones((16, 8), np.float32), topology="torus4x4", axis_index_groups=[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]])
    )
    parsed = parse(trace)
    assert "device (1,2)" in parsed["names"].values()
    assert "(0,1)->(0,2)" in parsed["names"].values()


def test_cli_writes_the_trace(tmp_path):
    path = tmp_path / "run.json"
    out = runner.invoke(app, ["run", str(ROOT / "scenarios" / "allgather_ring8.yaml"), "--trace", str(path)])
    assert out.exit_code == 0, out.output
    trace = json.loads(path.read_text(encoding="utf-8"))
    parse(trace)
    transfers, hops = transfer_and_hop_slices(trace)
    assert len(transfers) == len(hops) == 2 * 8 * 7
    assert trace["otherData"]["scenario"] == "allgather_ring8"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary left behind

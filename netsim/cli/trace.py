"""A run as a Chrome / Perfetto trace (trace-event JSON), for ui.perfetto.dev and chrome://tracing.

Layout of the trace, all read from the run's playback:

* one process per **device** (``device 3`` or ``device (0,1)``), holding a slice per
  transfer it sent, from the send to the arrival, with its bytes, source,
  destination, block, piece and step. Transfers that overlap in time go on separate
  threads of the device ("lanes"), because the trace-event format requires the slices
  of one thread to nest;
* one process ``links`` with one thread per directed link (``(0,1)->(0,2)``), holding
  a slice per hop: the time the chunk was on that link's wire;
* a ``compute`` thread in each device's process with a slice per compute step
  (programs), named after its op, with its FLOPs and bytes;
* flow arrows (``s``/``t``/``f`` events) following each chunk from its send slice
  through every hop, placed inside each slice (the middle of a hop) so they bind to it
  and run forward in time.

Times are microseconds, as the format wants; ``displayTimeUnit`` is ``ns``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netsim.destinations import StagedFile, all_or_nothing, check_file

if TYPE_CHECKING:
    from netsim.result import Result

__all__ = ["chrome_trace", "save_trace", "write_trace"]

_US = 1e6


def _device_name(topology: Any, device: int) -> str:
    if len(topology.dims) == 1:
        return f"device {device}"
    return "device (" + ",".join(map(str, topology.coord(device))) + ")"


def _mid(ts: float, dur: float) -> float:
    return ts + dur / 2


def chrome_trace(result: Result) -> dict[str, Any]:
    """The run as a trace-event JSON object.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> trace = chrome_trace(netsim.all_gather(np.zeros((4, 8), np.float32), algorithm="ring"))
    >>> hops = [e for e in trace["traceEvents"] if e.get("cat") == "hop"]
    >>> len(hops), hops[0]["args"]["bytes"], hops[0]["ts"]
    (12, 32, 0.0)
    """
    topology = result.topology_obj
    if topology is None:
        raise ValueError(f"result of {result.collective} on {result.topology} carries no topology to trace")
    n = result.n_devices
    links_pid = n + 1
    events: list[dict[str, Any]] = []
    slices: list[dict[str, Any]] = []
    flows: list[dict[str, Any]] = []
    for device in range(n):
        pid = device + 1
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": _device_name(topology, device)}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": device}})
    events.append({"ph": "M", "name": "process_name", "pid": links_pid, "tid": 0, "args": {"name": "links"}})
    events.append({"ph": "M", "name": "process_sort_index", "pid": links_pid, "tid": 0, "args": {"sort_index": n}})
    next_tid = 1
    link_tid = {}
    for order, link in enumerate(topology.links):
        link_tid[link] = next_tid
        events.append({"ph": "M", "name": "thread_name", "pid": links_pid, "tid": next_tid, "args": {"name": topology.link_name(link)}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": links_pid, "tid": next_tid, "args": {"sort_index": order}})
        next_tid += 1
    lanes: list[list[float]] = [[] for _ in range(n)]  # per device: when each lane is free again
    lane_tid: dict[tuple[int, int], int] = {}
    offset = 0.0
    flow_id = 0
    for leaf_index, leaf in enumerate(result.leaves):
        schedule, playback = leaf.schedule, leaf.playback
        chains: list[list[Any]] = [[] for _ in schedule.transfers]
        for hop in playback.hops:
            chains[hop.transfer].append(hop)
        order = sorted(range(len(schedule.transfers)), key=lambda i: (playback.sent_at[i], i))
        for i in order:
            t = schedule.transfers[i]
            sent, arrived = offset + playback.sent_at[i], offset + playback.arrived_at[i]
            lane = next((k for k, free in enumerate(lanes[t.src]) if free <= sent), None)
            if lane is None:
                lane = len(lanes[t.src])
                lanes[t.src].append(arrived)
                lane_tid[(t.src, lane)] = next_tid
                name = "sends" if lane == 0 else f"sends (lane {lane + 1})"
                events.append({"ph": "M", "name": "thread_name", "pid": t.src + 1, "tid": next_tid, "args": {"name": name}})
                events.append({"ph": "M", "name": "thread_sort_index", "pid": t.src + 1, "tid": next_tid, "args": {"sort_index": lane}})
                next_tid += 1
            lanes[t.src][lane] = arrived
            block, piece = t.key
            args = {
                "bytes": playback.nbytes[i],
                "src": t.src,
                "dst": t.dst,
                "block": block,
                "piece": piece,
                "step": t.step,
                "phase": t.phase,
                "op": "add" if t.reduce else "place",
                "transfer": i,
                "leaf": leaf_index,
                "hops": len(chains[i]),
            }
            label = f"block {block}.{piece} {t.src}->{t.dst}"
            ts, dur = sent * _US, (arrived - sent) * _US
            pid, tid = t.src + 1, lane_tid[(t.src, lane)]
            slices.append({"ph": "X", "cat": "transfer", "name": label, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args})
            if not chains[i]:
                continue
            first = chains[i][0]
            start_ts = (ts + _mid((offset + first.start) * _US, (first.end - first.start) * _US)) / 2  # inside the send, before the first hop's mark
            flows.append({"ph": "s", "cat": "chunk", "name": "chunk", "id": flow_id, "ts": start_ts, "pid": pid, "tid": tid})
            for k, hop in enumerate(chains[i]):
                hop_ts, hop_dur = (offset + hop.start) * _US, (hop.end - hop.start) * _US
                hop_args = {**args, "hop": k, "link": topology.link_name(hop.link)}
                slices.append(
                    {"ph": "X", "cat": "hop", "name": label, "ts": hop_ts, "dur": hop_dur, "pid": links_pid, "tid": link_tid[hop.link], "args": hop_args}
                )
                last = k == len(chains[i]) - 1
                flow = {
                    "ph": "f" if last else "t",
                    "cat": "chunk",
                    "name": "chunk",
                    "id": flow_id,
                    "ts": _mid(hop_ts, hop_dur),
                    "pid": links_pid,
                    "tid": link_tid[hop.link],
                }
                if last:
                    flow["bp"] = "e"
                flows.append(flow)
            flow_id += 1
        next_tid = _compute_slices(schedule, playback, offset, next_tid, events, slices)
        offset += playback.time
    return {
        "traceEvents": events + slices + flows,
        "displayTimeUnit": "ns",
        "otherData": {
            "generator": "netsim",
            "scenario": result.scenario or "",
            "collective": result.collective,
            "algorithm": result.algorithm,
            "topology": result.topology,
            "simulated_time_s": result.time,
        },
    }


def _compute_slices(schedule: Any, playback: Any, offset: float, next_tid: int, events: list[dict[str, Any]], slices: list[dict[str, Any]]) -> int:
    """A ``compute`` thread in each device's process, one slice per compute step (a compute unit does one at a time)."""
    tids: dict[int, int] = {}
    n = len(schedule.transfers)
    for j, step in enumerate(schedule.computes):
        if step.join:  # a join does no work and takes no time: no slice
            continue
        if step.device not in tids:
            tids[step.device] = next_tid
            events.append({"ph": "M", "name": "thread_name", "pid": step.device + 1, "tid": next_tid, "args": {"name": "compute"}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": step.device + 1, "tid": next_tid, "args": {"sort_index": -1}})
            next_tid += 1
        start, end = offset + float(playback.computes.started_at[j]), offset + float(playback.computes.ended_at[j])
        args = {"flops": step.flops, "bytes": step.bytes, "seconds": step.seconds, "step": n + j}
        slices.append(
            {
                "ph": "X",
                "cat": "compute",
                "name": step.name or "compute",
                "ts": start * _US,
                "dur": (end - start) * _US,
                "pid": step.device + 1,
                "tid": tids[step.device],
                "args": args,
            }
        )
    return next_tid


def write_trace(result: Result, path: str | Path) -> Path:
    """Write :func:`chrome_trace` to the regular (or new) file ``path``, through a file beside it, so a failure leaves nothing.

    Examples
    --------
    >>> import numpy as np, netsim, tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run.json"
    >>> write_trace(netsim.all_gather(np.arange(4)), out).exists()
    True
    """
    path = check_file("--trace", path)
    staged = StagedFile(path)
    with all_or_nothing(staged):
        save_trace(result, staged.path)
    return path


def save_trace(result: Result, path: str | Path) -> None:
    """Write :func:`chrome_trace` into the file ``path`` as it is (no checks: see :func:`write_trace`)."""
    data = chrome_trace(result)
    with open(path, "w", encoding="utf-8") as stream:
        json.dump(data, stream, separators=(",", ":"))

"""The explanation of every bundled scenario, read against its schedule and its playback."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

import netsim
from netsim.network.units import format_bytes
from netsim.teaching.explain import explain

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
LINE = re.compile(r"^\s+(\d+) → (\d+)\s+(?:block (\d+)|bundle of).*\[([^,\]]+)")


def _expected_whom(result, src, dst):
    """Who a transfer goes to, worked out from the coordinates or the group order (independently of netsim.teaching)."""
    leaf = result.leaves[0].schedule
    topology = result.topology_obj
    if leaf.pattern == "permute" and len(topology.dims) == 1:
        shift = (dst - src) % topology.n_devices
        return {1: "its right neighbour", topology.n_devices - 1: "its left neighbour"}.get(shift, f"the device {shift} places on")
    group = next(g for g in leaf.groups if src in g)
    spans = sum(len({topology.coord(d)[a] for d in leaf.groups[0]}) > 1 for a in range(len(topology.dims)))
    if len(topology.dims) > 1 and ((spans > 1 and len(group) > 2) or leaf.pattern == "permute"):
        moves = [(a, (y - x) % n) for a, (x, y, n) in enumerate(zip(topology.coord(src), topology.coord(dst), topology.dims, strict=True)) if x != y]
        moves = [
            (a, (k if k <= n // 2 else k - n) if topology.wraparound[a] else topology.coord(dst)[a] - topology.coord(src)[a])
            for (a, k), n in zip(moves, [topology.dims[a] for a, _ in moves], strict=True)
        ]
        if moves and moves[0][0] == 0 and getattr(topology, "n_slices", 1) > 1:  # axis 0 of several slices: the DCN
            k = moves[0][1]
            return f"its peer {k:+d} slice{'s' if abs(k) > 1 else ''} away, over the DCN" if len(moves) == 1 else "a device of another slice, over the DCN"
        if len(moves) == 1 and abs(moves[0][1]) == 1:
            return f"its {'+' if moves[0][1] > 0 else '−'}1 neighbour along axis {moves[0][0]}"
        return "the device " + ", ".join(f"{k:+d} along axis {a}" for a, k in moves)
    if len(group) == 2:
        return "the other member of its group"
    ahead = (group.index(dst) - group.index(src)) % len(group)
    return {1: "its right neighbour", len(group) - 1: "its left neighbour"}.get(ahead, f"the member {ahead} places on in its group")


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_explanation_agrees_with_the_schedule(path, bundled_runs):
    result = bundled_runs[path.stem]  # run once per session (see conftest)
    schedule, playback = result.leaves[0].schedule, result.leaves[0].playback
    text = explain(result, summarise=False)
    lines = text.splitlines()
    devices = {d for g in schedule.groups for d in g}
    n = len(schedule.groups[0])
    per_block = result.bytes_per_device if schedule.pattern in ("gather", "permute") else result.bytes_per_device // n
    if schedule.pattern == "permute":
        senders = "each sends its" if len(schedule.groups) == len(devices) else f"{len(schedule.groups)} of them send"
        assert lines[1].startswith(f"{len(devices)} devices; {senders}"), lines[1]
        assert f"block (s = {format_bytes(per_block)}) to another: " in lines[1]
        assert all(f"{a}→{b}" in lines[1] for a, b in schedule.groups[:8])
    else:
        groups = len(schedule.groups)
        assert lines[1] == f"{len(devices)} devices in {groups} group{'s' if groups > 1 else ''} of {n}; a block is {format_bytes(per_block)} (s)."
    steps = re.split(r"^Step \d+/\d+", text, flags=re.M)[1:]
    assert len(steps) == schedule.n_steps
    for step, body in enumerate(steps):
        sentence = body.split("\n")[0]
        moves = {(t.src, t.dst, t.key[0], format_bytes(playback.nbytes[i])) for i, t in enumerate(schedule.transfers) if t.step == step}
        for line in body.split("\n")[1:]:
            match = LINE.match(line)
            if not match:
                continue
            src, dst, block, nbytes = int(match[1]), int(match[2]), match[3], match[4]
            if block is not None:
                assert (src, dst, int(block), nbytes) in moves, f"step {step + 1}: {line.strip()} is not in the schedule"
            whom = _expected_whom(result, src, dst)
            said = whom in sentence or (whom in ("its right neighbour", "its left neighbour") and "both neighbours" in sentence)
            assert said, f"step {step + 1}: {src} → {dst} is not described in: {sentence}"


def test_ppermute_shift_is_told_as_a_shift_with_both_halves_going_right():
    text = explain(netsim.simulate(netsim.load_scenario(ROOT / "scenarios" / "ppermute_ring8_shift.yaml")))
    assert "8 devices; each sends its block (s = 1 MiB) to another: 0→1, 1→2, 2→3, 3→4, 4→5, 5→6, 6→7, 7→0." in text
    assert "(both halves of a block go the same way)" in text
    assert "Step 1/1: every device sends its own block to its right neighbour (both halves)." in text
    assert "groups of 2" not in text and "each way" not in text


def test_bundled_multiaxis_block_is_what_one_device_holds_and_directions_are_torus_axes():
    result = netsim.simulate(netsim.load_scenario(ROOT / "scenarios" / "allgather_tpu_v4_4x4x4_bundled.yaml"))
    assert "64 devices in 1 group of 64; a block is 48 KiB (s)." in explain(result)  # the summary a run of 64 devices gets
    text = explain(result, summarise=False)
    assert "64 devices in 1 group of 64; a block is 48 KiB (s)." in text
    assert "its +1 neighbour along axis 2 (piece 5 of 6)" in text


def test_bidirectional_ring_halves_go_opposite_ways():
    text = explain(netsim.simulate(netsim.load_scenario(ROOT / "scenarios" / "allgather_ring8.yaml")))
    assert "(the two halves of a block go opposite ways)" in text
    assert "to its right neighbour (first half) and its left neighbour (second half)" in text

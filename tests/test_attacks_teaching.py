"""Attacks on the teaching views: runs that move nothing, and animations too long to draw.

A ppermute that moves nothing (``perm: []``, or only pairs (d, d)) is a valid run of 0 s: every
view says so (``explain`` used to exit 3 with StopIteration or IndexError, ``animate`` 3 and
``timeline`` 2 with NumPy's "number sections must be larger than 0."). An animation is capped
by its work, frames x drawn elements, not only by its frames and devices (the largest allowed
used to take 87 s to over 100 s).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

import netsim
from netsim.teaching.explain import explain
from netsim.teaching.explain_scale import device_view, step_view
from netsim.teaching.replay import Replay

X = np.arange(1, 5, dtype=np.float32).reshape(4, 1)


def run(perm):
    return netsim.ppermute(X, perm=perm, topology="ring4")


@pytest.mark.parametrize(
    "perm, output, story",
    [
        ([], [0, 0, 0, 0], "perm is empty: no device sends anything, so every device ends with zeros, as jax.lax.ppermute gives them."),
        (
            [(0, 0), (1, 1)],
            [1, 2, 0, 0],
            "Every pair of perm (0→0, 1→1) sends a device's block to itself: it stays where it is;"
            " the devices in no pair end with zeros, as jax.lax.ppermute gives them.",
        ),
    ],
)
def test_nothing_to_move_is_explained_as_a_run_of_zero_seconds(perm, output, story):
    result = run(perm)
    assert result.time == 0.0 and result.output.ravel().tolist() == output  # the NumPy reference: jax.lax.ppermute's zeros
    assert explain(result).splitlines() == [
        "ppermute on ring4: nothing crosses a link, and the simulated time is 0 s.",
        story,
        "",
        "Total",
        "  simulated time: 0 ns (0.0 s) (no step: nothing to move)",
    ]
    steps = "0 steps" if not perm else "1 steps"
    assert device_view(result, 0).startswith(f"device 0 in ppermute on ring4 (direct): its transfers over {steps}\n")


def test_a_step_of_a_run_without_steps_is_a_user_error():
    with pytest.raises(ValueError, match=r"^--step 1: this run has no step: nothing moves \(netsim explain without --step says why\)$"):
        step_view(run([]), 1)


def test_a_pair_of_a_device_with_itself_among_others_keeps_its_block_in_the_story():
    result = run([(0, 0), (1, 2)])
    assert result.output.ravel().tolist() == [1, 0, 2, 0]
    text = explain(result)
    assert "2 of them send their block (s = 4 B) to another or, paired with itself, keeps it: 0→0, 1→2." in text
    assert "device 0 sends its own block to itself (both halves, no link crossed); device 1 sends its own block to its right neighbour (both halves)." in text
    assert "      0 → 0   block 0 (device 0's data) to itself: it stays in place [4 B, first half, no link]" in text
    leaf = result.leaves[0]
    end = Replay(leaf.schedule, leaf.playback).end
    halves = [(0, 0), (0, 1)], [(1, 0), (1, 1)]  # (block, piece)
    assert end[0] == dict.fromkeys(halves[0], frozenset({0}))  # device 0 still holds its own block
    assert end[2] == dict.fromkeys(halves[1], frozenset({1}))


@pytest.mark.parametrize("perm", [[], [(0, 0), (1, 1)]])
def test_timeline_and_animation_of_nothing_to_move_are_drawn(tmp_path, perm):
    from netsim.teaching.animate_axes import animation
    from netsim.teaching.timeline import save_timeline

    result = run(perm)
    save_timeline(result, tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    animation(result, frames=2).save(tmp_path / "a.html")
    assert "<html" in (tmp_path / "a.html").read_text().lower()


def test_the_cli_explains_self_pairs_with_exit_0(tmp_path):
    scenario = tmp_path / "self.yaml"
    scenario.write_text("name: self_pairs\ntopology: ring8\ncollective: {op: ppermute, perm: [[0, 0], [1, 1]]}\ninput: {bytes_per_device: 1 KiB}\n")
    done = subprocess.run([sys.executable, "-m", "netsim", "explain", str(scenario)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith("ppermute on ring8: nothing crosses a link, and the simulated time is 0 s.\n")


# ---------------------------------------------------------------- animations capped by their work


def test_an_animation_too_long_to_draw_is_refused_with_the_numbers_and_the_fix(tmp_path):
    out = tmp_path / "ring8.gif"
    scenario = str(ROOT / "scenarios" / "allgather_ring8.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "netsim", "animate", scenario, "-o", str(out), "--frames", "300"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    # ring8: 8 devices x 8 blocks x 2 halves = 128 slots, 16 links, 8 devices
    assert done.stderr == (
        "error: --frames 300: an animation of ring8 draws 152 elements a frame (+1,000 for the figure): 300 x 1,152 = 345,600,"
        f" over the 200,000 netsim draws (about a minute); use --frames 173 or fewer, or see it with `netsim timeline {scenario} -o timeline.png`\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_per_axis_animation_is_refused_before_simulating(tmp_path):
    scenario = tmp_path / "ring64.yaml"
    scenario.write_text("name: ring64\ntopology: {kind: ring, dims: [64]}\ncollective: {op: all_gather}\ninput: {bytes_per_device: 1 KiB}\n")
    done = subprocess.run(
        [sys.executable, "-m", "netsim", "animate", str(scenario), "-o", str(tmp_path / "a.gif"), "--frames", "200"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: --frames 200: an animation of ring64 draws 192 elements a frame (+1,000 for the figure): 200 x 1,192 = 238,400,")
    assert "use --frames 167 or fewer" in done.stderr


def test_drawn_elements_counts_what_the_drawing_draws():
    from netsim.teaching.animate import animate
    from netsim.teaching.views import drawn_elements

    for label, result in (
        ("all_gather", netsim.all_gather(np.zeros((4, 2), np.float32), topology="ring4")),
        ("psum_scatter", netsim.psum_scatter(np.zeros((8, 8), np.float32), topology="ring8", algorithm="ring")),
        ("ppermute", run([(0, 1), (1, 2)])),
    ):
        drawing = animate(result, frames=2)._drawing()
        drawn = sum(len(slots) for slots in drawing.slots) + len(drawing.links) + result.topology_obj.n_devices
        assert drawn_elements(result.topology_obj, result.leaves[0].schedule) == drawn, label

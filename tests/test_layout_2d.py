"""Layouts: devices where a teacher expects them, and no arrow hidden under a device."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from netsim.network.topology import mesh, ring, torus
from netsim.teaching.layout_2d import layout

TOPOLOGIES = [ring(2), ring(3), ring(8), torus((4, 4)), torus((2, 3)), mesh((3, 3)), mesh((4,)), torus((4, 2), (True, False)), torus((2, 3, 4))]


def _inside(point, centre, box):
    return abs(point[0] - centre[0]) < box[0] and abs(point[1] - centre[1]) < box[1]


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda t: t.name)
def test_every_link_has_its_own_path_from_box_edge_to_box_edge(topology):
    drawing = layout(topology, box=(0.4, 0.25))
    assert set(drawing.paths) == set(topology.links)
    for (u, v, _), path in drawing.paths.items():
        # the arrow starts and ends just outside the two boxes: not hidden under them
        assert not _inside(path.start, drawing.positions[u], drawing.box)
        assert not _inside(path.end, drawing.positions[v], drawing.box)
        assert math.dist(path.start, drawing.positions[u]) < math.dist(path.start, drawing.positions[v])
    starts = [tuple(np.round(p.point(0.5), 6)) for p in drawing.paths.values()]
    assert len(set(starts)) == len(starts)  # no two links drawn on top of each other


@pytest.mark.parametrize("topology", [ring(8), torus((4, 4)), mesh((3, 3)), torus((4, 2), (True, False))], ids=lambda t: t.name)
def test_no_link_runs_through_a_device_it_does_not_connect(topology):
    drawing = layout(topology)
    for (u, v, _), path in drawing.paths.items():
        for f in np.linspace(0, 1, 101):
            point = path.point(f)
            for device, centre in drawing.positions.items():
                if device not in (u, v):
                    assert not _inside(point, centre, drawing.box), f"{topology.link_name((u, v, _))} crosses device {device}"


def test_devices_do_not_overlap_and_rings_go_clockwise_from_the_top():
    for topology in TOPOLOGIES:
        drawing = layout(topology, box=(0.6, 0.3))
        w, h = drawing.box
        points = list(drawing.positions.values())
        for i, a in enumerate(points):
            for b in points[i + 1 :]:
                assert abs(a[0] - b[0]) >= 2 * w or abs(a[1] - b[1]) >= 2 * h
    positions = layout(ring(8)).positions
    angles = [math.atan2(y, x) for x, y in (positions[d] for d in range(8))]
    assert angles[0] == pytest.approx(math.pi / 2)
    assert all((a - b) % (2 * math.pi) == pytest.approx(math.pi / 4) for a, b in itertools.pairwise(angles))  # clockwise


def test_a_torus_wrap_link_is_an_arc_and_a_3d_torus_is_drawn_as_slices():
    drawing = layout(torus((4, 4)))
    wrap = drawing.paths[(3, 0, (1, 1))]  # (0,3) -> (0,0): closes row 0
    straight = drawing.paths[(0, 1, (1, 1))]
    assert abs(wrap.control[1] - wrap.start[1]) > drawing.box[1]  # bows clear of the row
    assert straight.control[1] == pytest.approx((straight.start[1] + straight.end[1]) / 2)
    cube = layout(torus((2, 3, 4)))
    assert [label for label, _, _ in cube.panels] == ["slice 0 (first coordinate = 0)", "slice 1 (first coordinate = 1)"]
    slice_0 = [x for d, (x, _) in cube.positions.items() if d < 12]
    slice_1 = [x for d, (x, _) in cube.positions.items() if d >= 12]
    assert max(slice_0) < min(slice_1)


def test_bad_box_is_refused():
    with pytest.raises(ValueError, match=r"box half-sizes must be positive, got \(0, 1\)"):
        layout(ring(4), box=(0, 1))

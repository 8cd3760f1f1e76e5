"""The estimate_kind promise, on generated layouts: an ``exact`` estimate equals the
simulated time to 1e-9 relative, a ``lower_bound`` is never beaten.

Layouts: rings and lines (groups planned as one ring, and as a mesh axis), 2-D and
3-D tori and meshes (equal and unequal axes, and axes of one device), a strided and a permuted group; every
algorithm that runs each collective; ppermute shifts and a scattered permutation.
Payloads: latency-bound, bandwidth-bound, and blocks that do not split evenly into
an algorithm's pieces.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import sample_then_slow

import netsim
from netsim.algorithms.registry import ALGORITHMS
from netsim.analysis.why import analyse
from netsim.network.device_mesh import Mesh
from netsim.network.topology import mesh, torus

PATTERN = {"all_gather": "gather", "psum_scatter": "reduce_scatter", "psum": "all_reduce", "all_to_all": "all_to_all"}
ELEMENTS = (3, 1001, 12000)
"""Elements per block: latency-bound and uneven, near the crossover and uneven, bandwidth-bound."""


def _layouts():
    for n in (2, 3, 4, 5, 8):
        for wrap in (True, False):
            topology = torus((n,)) if wrap else mesh((n,))
            yield f"{topology.name}", topology, None
            yield f"{topology.name}-axis", topology, Mesh({"x": n}, topology).groups("x")
    for dims in ((2, 2), (4, 4), (2, 4), (4, 3), (2, 2, 2), (2, 3, 2), (4, 1), (2, 1, 2)):  # axes of 1 move nothing
        for wrap in (True, False):
            topology = torus(dims) if wrap else mesh(dims)
            names = {f"a{i}": d for i, d in enumerate(dims)}
            yield topology.name, topology, Mesh(names, topology).groups(list(names))
    yield "ring8-strided", torus((8,)), [[0, 2, 4, 6], [1, 3, 5, 7]]
    yield "torus4x4-columns", torus((4, 4)), Mesh({"x": 4, "y": 4}, torus((4, 4))).groups("x")
    yield "torus2x4-permuted", torus((2, 4)), [[0, 1, 2, 3, 7, 6, 5, 4]]


def _cases():
    for name, topology, groups in _layouts():
        for collective, pattern in PATTERN.items():
            for algorithm, plan in ALGORITHMS.items():
                if plan.runs(pattern):
                    yield pytest.param(topology, groups, collective, algorithm, id=f"{name}-{collective}-{algorithm}")


def _run(topology, groups, collective, algorithm, elements):
    n = topology.n_devices
    group = len(groups[0]) if groups is not None else n
    x = np.ones((n, group * elements), np.float32)
    kwargs = {"topology": topology, "algorithm": algorithm, "data": "none"}
    if groups is not None:
        kwargs["axis_index_groups"] = groups
    if collective == "psum_scatter":
        kwargs["tiled"] = True
    if collective == "all_to_all":
        x = x.reshape(n, group, elements)
        kwargs.update(split_axis=0, concat_axis=0)
    return getattr(netsim, collective)(x, **kwargs)


def _check(result):
    estimate = analyse(result).estimate
    assert estimate is not None and estimate.kind in ("exact", "lower_bound"), estimate
    if estimate.time_s == 0:  # nothing moves (a ppermute onto itself)
        assert result.time == 0 and estimate.kind == "exact"
        return estimate.kind
    relative = (result.time - estimate.time_s) / estimate.time_s
    if estimate.kind == "exact":
        assert abs(relative) <= 1e-9, f"exact {estimate.formula}: simulated {result.time!r}, estimate {estimate.time_s!r}"
    else:
        assert relative >= -1e-9, f"lower bound {estimate.formula}: simulated {result.time!r} < {estimate.time_s!r}"
    return estimate.kind


@pytest.mark.parametrize(("topology", "groups", "collective", "algorithm"), sample_then_slow(_cases(), 250, seed=37))
def test_every_estimate_keeps_its_kinds_promise(topology, groups, collective, algorithm):
    n = len(groups[0]) if groups is not None else topology.n_devices
    if ALGORITHMS[algorithm].power_of_two and n & (n - 1):
        pytest.skip("needs a power-of-two group")
    for elements in ELEMENTS:
        _check(_run(topology, groups, collective, algorithm, elements))


@pytest.mark.parametrize("topology", [torus((8,)), mesh((8,)), torus((4, 4)), mesh((2, 4)), torus((2,)), torus((2, 2, 2))], ids=lambda t: t.name)
def test_ppermute_estimates_keep_their_promise(topology):
    n = topology.n_devices
    perms = [[(i, (i + k) % n) for i in range(n)] for k in range(n)]
    perms.append([(0, n - 1), (n - 1, 0)] + ([(1, n // 2)] if n > 2 else []))
    kinds = set()
    for perm in perms:
        for elements in (5, 20001):
            kinds.add(_check(netsim.ppermute(np.ones((n, elements), np.float32), perm, topology=topology)))
    assert "exact" in kinds


def test_the_generated_layouts_are_mostly_exact_on_rings_and_lines():
    """Counted, so that a form quietly turning into a bound shows: every ring algorithm on
    a ring of neighbours, the unidirectional ring and the line algorithm on a line (blocks
    that split evenly: with uneven halves the line's form is a lower bound)."""
    exact = []
    for topology, groups, algorithm in [
        (torus((5,)), None, "ring"),
        (torus((5,)), None, "bidirectional_ring"),
        (torus((5,)), None, "bidirectional_halfway"),
        (mesh((5,)), None, "ring"),
        (mesh((5,)), Mesh({"x": 5}, mesh((5,))).groups("x"), "multiaxis"),
        (mesh((5,)), Mesh({"x": 5}, mesh((5,))).groups("x"), "multiaxis_bundled"),
        (torus((4, 4)), Mesh({"x": 4, "y": 4}, torus((4, 4))).groups(["x", "y"]), "multiaxis_bundled"),
        (torus((2, 2, 2)), None, "recursive_doubling"),
    ]:
        for elements in (6, 1002, 12000):
            exact.append(_check(_run(topology, groups, "all_gather", algorithm, elements)) == "exact")
    assert all(exact)


def test_a_bound_says_what_it_bounds_and_the_line_form_is_the_book_s_doubling():
    line = _run(mesh((4,)), Mesh({"x": 4}, mesh((4,))).groups("x"), "all_gather", "multiaxis", 65536)
    ring = _run(torus((4,)), None, "all_gather", "bidirectional_ring", 65536)
    s, B, alpha = 4 * 65536 * 4, 45e9, 1e-6
    assert line.time == pytest.approx(3 * s / B + alpha, rel=1e-12)
    assert ring.time == pytest.approx(3 * (alpha + s / (2 * B)), rel=1e-12)
    assert math.isclose(line.time / ring.time, 1.9, rel_tol=0.06)  # tends to 2 as the payload grows
    bound = analyse(_run(torus((4, 4)), None, "all_gather", "ring", 1000)).estimate
    assert (bound.kind, bound.bounds) == ("lower_bound", "the simulated time is at least this")


@pytest.mark.parametrize("topology", [mesh((4, 4)), torus((4, 4)), torus((2, 2, 2)), mesh((2, 3, 2)), torus((8,))], ids=lambda t: t.name)
def test_multipath_ppermute_estimates_keep_their_promise(topology):
    n = topology.n_devices
    perms = [[(0, n - 1)], [(0, n - 1), (n - 1, 0)], [(i, (i + 3) % n) for i in range(n)], [(i, n - 1 - i) for i in range(n)]]
    for perm in perms:
        for elements in (5, 20001):
            x = np.ones((n, elements), np.float32)
            result = netsim.ppermute(x, perm, topology=topology, algorithm="multipath")
            assert result.verified
            _check(result)


def test_multipath_sends_a_corner_to_corner_payload_half_each_way():
    x = np.ones((16, 2**16), np.float32)
    one = netsim.ppermute(x, [(0, 15)], topology=mesh((4, 4)))
    two = netsim.ppermute(x, [(0, 15)], topology=mesh((4, 4)), algorithm="multipath")
    s, B = 2**18, 45e9
    assert one.time == pytest.approx(6e-6 + s / B, rel=1e-12) and two.time == pytest.approx(6e-6 + s / (2 * B), rel=1e-12)
    assert analyse(two).estimate.kind == "exact"
    with pytest.raises(ValueError, match="ppermute runs the 'direct' or 'multipath' algorithm, got 'ring'"):
        netsim.ppermute(x, [(0, 15)], topology=mesh((4, 4)), algorithm="ring")


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("calibrated", [False, True], ids=["nominal", "calibrated"])
def test_a_psum_whose_payload_does_not_split_into_blocks_keeps_its_promise(n, calibrated):
    """1 KiB (256 float32) on 3 or 5 devices: blocks of one element more and less. On a ring the
    largest block sets the pace, exactly, for every ring algorithm; on a line the ring's form
    of the smallest block is a bound it keeps; under calibration (a fixed cost and 0.8 of the
    bandwidth) the same."""
    from netsim.network.calibration import Calibration, calibrate

    def where(topology):
        return calibrate(topology, values=Calibration(0.8, 5e-6)) if calibrated else topology

    kinds = {}
    for elements in (256, 1001):
        for algorithm in ("ring", "bidirectional_ring", "bidirectional_halfway"):
            run = netsim.psum(np.ones((n, elements), np.float32), topology=where(torus((n,))), algorithm=algorithm, data="none")
            kinds[("ring", algorithm, elements)] = _check(run)
        line = where(mesh((n,)))
        for algorithm, groups in (("ring", None), ("multiaxis", Mesh({"x": n}, line).groups("x"))):
            kinds[("line", algorithm, elements)] = _check(
                netsim.psum(np.ones((n, elements), np.float32), topology=line, algorithm=algorithm, axis_index_groups=groups, data="none")
            )
    assert all(kind == "exact" for (where_, _, _), kind in kinds.items() if where_ == "ring")

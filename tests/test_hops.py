"""One-hop routes on arrays give the links Topology.route gives, pair by pair."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from netsim.engine.columns import transfer_columns
from netsim.engine.routes import Routes
from netsim.network.hops import one_hop
from netsim.network.topology import mesh, ring, torus


@pytest.mark.parametrize("topology", [ring(2), ring(5), torus((2, 3, 4)), torus((4, 4), (True, False)), mesh((3, 2)), torus((1, 4, 2))], ids=str)
def test_one_hop_is_the_route_where_it_is_one_link(topology):
    n = topology.n_devices
    pairs = np.array(list(itertools.product(range(n), range(n))))
    for tie in (1, -1):
        axis, step = one_hop(topology, pairs[:, 0], pairs[:, 1], tie)
        for (u, v), a, s in zip(pairs.tolist(), axis.tolist(), step.tolist(), strict=True):
            route = topology.route(u, v, tie)
            assert (route == ((u, v, (a, s)),)) if a >= 0 else len(route) != 1


def test_routes_found_on_arrays_are_those_found_one_by_one():
    topology = torus((4, 3, 2))
    n = topology.n_devices
    moves = [SimpleNamespace(src=u, dst=v, key=0, reduce=False, direction=d, deps=()) for u in range(n) for v in range(n) for d in (1, -1, 2, 3)]
    columns = transfer_columns(moves)
    inverse, numbers, ids = Routes(topology).distinct(topology, columns)
    one_by_one = Routes(topology)
    one_by_one._one_hops = lambda *args: None  # every route from Topology.route
    expected = one_by_one.distinct(topology, columns)
    assert inverse.tolist() == expected[0].tolist() and numbers == expected[1] and ids == expected[2]
    assert sum(len(r) == 1 for r in ids) > 100

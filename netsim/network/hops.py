"""One-hop routes on arrays: many device pairs' dimension-order routes at once, where they are one link.

:meth:`netsim.network.topology.Topology.route` routes one pair at a time. Planning a
collective on a pod asks for tens of thousands of routes between neighbours; when no
link is down, dimension-order routing is arithmetic on coordinates, and
:func:`one_hop` does it for all of them at once (the others are left to ``route``).
"""

from __future__ import annotations

import numpy as np

from netsim.network.topology import Topology

__all__ = ["one_hop"]


def one_hop(topology: Topology, src: np.ndarray, dst: np.ndarray, tie: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, the axis and step of the one link :meth:`Topology.route` takes from ``src`` to ``dst``
    (ties broken by ``tie``, +1 or -1, per pair or for all): axis -1 where that route is not one link.

    Only for a topology with no link down (where ``route`` may detour); the pairs' shape is kept.

    Examples
    --------
    >>> from netsim.network.topology import torus
    >>> t = torus((4, 4))
    >>> axis, step = one_hop(t, np.array([0, 0, 0, 0]), np.array([1, 5, 3, 0]), 1)
    >>> axis.tolist(), step.tolist(), t.route(0, 3)
    ([1, -1, 1, -1], [1, 0, -1, 0], ((0, 3, (1, -1)),))
    """
    shape = np.shape(src)
    dims = np.array(topology.dims, np.int64)
    here = np.stack(np.unravel_index(np.asarray(src).reshape(-1), topology.dims), axis=1)
    there = np.stack(np.unravel_index(np.asarray(dst).reshape(-1), topology.dims), axis=1)
    forward = (there - here) % dims
    backward = np.where(forward > 0, dims - forward, 0)
    ties = np.broadcast_to(np.asarray(tie).reshape(-1, 1) if np.ndim(tie) else tie, forward.shape)
    ahead = (forward < backward) | ((forward == backward) & (ties > 0))
    wraps = np.array(topology.wraparound, bool)
    step = np.where(wraps, np.where(ahead, 1, -1), np.where(there >= here, 1, -1))
    count = np.where(wraps, np.where(ahead, forward, backward), np.abs(there - here))
    axis = np.argmax(count > 0, axis=1)
    one = count.sum(axis=1) == 1
    step = np.where(one, step[np.arange(len(axis)), axis], 0)
    return np.where(one, axis, -1).reshape(shape), step.reshape(shape)

"""MLX's flavour of the collectives: ``mlx.core.distributed.all_gather`` and ``all_sum``.

MLX gathers by concatenating every process's array along the first axis, and sums
with ``all_sum``. Both map onto netsim's JAX-exact collectives, with the same
simulated timings: ``all_gather`` is a tiled all_gather on axis 0 (a scalar per
device is stacked instead, giving shape ``(n,)``), ``all_sum`` is ``psum``.

>>> import numpy as np
>>> import netsim.mlx
>>> netsim.mlx.all_gather(np.arange(6).reshape(3, 2)).output[0]
array([0, 1, 2, 3, 4, 5])
"""

from __future__ import annotations

from typing import Any

from netsim.pipeline import run_collective
from netsim.result import Result
from netsim.run import TopologyLike
from netsim.semantics.gather import AllGatherLayout
from netsim.semantics.reduce import AllReduceLayout

__all__ = ["all_gather", "all_sum"]


def all_gather(x: Any, topology: TopologyLike = None, algorithm: str | None = None, *, verify: bool = True, cut_through: bool = True) -> Result:
    """Simulate ``mlx.core.distributed.all_gather``: every device gets all inputs concatenated on the first axis.

    Parameters
    ----------
    x : array_like or pytree
        Input stacked ``[n_devices, ...]``; each device's array of shape ``(a, ...)``
        becomes ``(n*a, ...)``, and a scalar per device becomes ``(n,)``.
    topology, algorithm, verify, cut_through
        As in :func:`netsim.all_gather`.

    Returns
    -------
    Result

    Examples
    --------
    >>> import numpy as np
    >>> all_gather(np.arange(3.0)).output[1]
    array([0., 1., 2.])
    >>> all_gather(np.ones((4, 2, 3))).output.shape
    (4, 8, 3)
    """
    return run_collective(
        "all_gather",
        x,
        lambda leaf: AllGatherLayout.check(leaf, 0, leaf.ndim > 1, None),
        topology,
        algorithm,
        verify,
        cut_through,
    )


def all_sum(x: Any, topology: TopologyLike = None, algorithm: str | None = None, *, verify: bool = True, cut_through: bool = True) -> Result:
    """Simulate ``mlx.core.distributed.all_sum``: every device gets the sum over all devices (a psum).

    Examples
    --------
    >>> import numpy as np
    >>> all_sum(np.arange(8).reshape(4, 2)).output[0]
    array([12, 16])
    """
    return run_collective(
        "all_sum",
        x,
        lambda leaf: AllReduceLayout.check(leaf, None),
        topology,
        algorithm,
        verify,
        cut_through,
    )

"""Algorithms: which chunk moves from which device to which, as data you can print.

A schedule (:class:`Schedule`) is a table of transfers, each waiting for the arrivals
it forwards; nothing here knows SimPy or timing. A new algorithm is a module here
that plans its moves and calls :func:`register`; importing this package registers
every algorithm, in the order of :data:`ALGORITHMS`.

Modules
-------
====================== ===========================================================================
``schedule``           :class:`Schedule` and :func:`build_schedule`; what blocks, pieces, patterns
                       and bundles are
``transfers``          ``Transfer`` and ``TransferTable`` (a schedule's transfers as columns)
``registry``           ``Algorithm``, ``AxesAlgorithm``, :data:`ALGORITHMS`, :func:`register`,
                       the defaults and :func:`~netsim.algorithms.registry.check_algorithm`
``planning``           one group's moves copied to every group, with what each transfer waits for
``rings``              ``ring``, ``bidirectional_ring``, ``bidirectional_halfway``
``direct``             ``direct`` (every pair at once) and ppermute's plan
``recursive_doubling`` ``recursive_doubling``
``recursive_halving``  ``recursive_halving``
``rabenseifner``       ``rabenseifner``
``torus``              ``multiaxis``, ``dimension_ordered``: over the axes of a torus or mesh
``bundled``            ``multiaxis_bundled``: multiaxis sending bundles
``hierarchical``       ``hierarchical``: inner reduce-scatter, outer (DCN) all-reduce, inner all-gather
``bundles``            messages made of several chunks
====================== ===========================================================================

Where a change goes
-------------------
A new algorithm is a module that yields its moves for one group and calls
:func:`register`, imported below in the order it should appear in
:data:`ALGORITHMS`. How transfers wait for each other is decided in ``planning``;
what a schedule holds, in ``schedule`` and ``transfers``.
"""

# The algorithm modules register themselves on import, in this order (the order of ALGORITHMS).
# isort: off
from netsim.algorithms import rings, direct, recursive_doubling, recursive_halving, rabenseifner, torus, bundled, hierarchical  # noqa: F401

# isort: on
from netsim.algorithms.registry import ALGORITHMS, register
from netsim.algorithms.schedule import Schedule, build_schedule
from netsim.algorithms.transfers import Transfer

__all__ = ["ALGORITHMS", "Schedule", "Transfer", "build_schedule", "register"]

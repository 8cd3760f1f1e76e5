"""Algorithms: which chunk moves from which device to which, as data you can print.

A schedule (:class:`Schedule`) is a table of transfers, each waiting for the arrivals
it forwards; nothing here knows SimPy or timing. A new algorithm is a module here
that plans its moves and calls :func:`register`; importing this package registers
every algorithm, in the order of :data:`ALGORITHMS`.

| module | holds |
|---|---|
| ``schedule`` | ``Transfer``, ``Schedule``, the registry and :func:`build_schedule` |
| ``rings``, ``direct``, ``recursive_doubling``, ``recursive_halving``, ``rabenseifner`` | one-dimensional algorithms |
| ``torus``, ``bundled`` | algorithms over the axes of a torus or mesh |
| ``bundles`` | messages made of several chunks |
"""

# The algorithm modules register themselves on import, in this order (the order of ALGORITHMS).
# isort: off
from netsim.algorithms import rings, direct, recursive_doubling, recursive_halving, rabenseifner, torus, bundled  # noqa: F401

# isort: on
from netsim.algorithms.schedule import ALGORITHMS, Schedule, Transfer, build_schedule, register

__all__ = ["ALGORITHMS", "Schedule", "Transfer", "build_schedule", "register"]

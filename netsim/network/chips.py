"""A device's compute facts: what a chip can compute and hold, for timing compute steps.

A device that works for ``F`` FLOPs and moves ``B`` bytes of HBM takes, roofline,
``max(F / peak_flops, B / hbm_bandwidth_Bps)`` seconds. Topologies carry these facts
on their nodes (:meth:`netsim.network.topology.Topology.device`); the TPU presets
(:mod:`netsim.network.presets`) know them per generation.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

__all__ = ["DEVICE_FIELDS", "check_device"]

DEVICE_FIELDS = ("peak_flops", "hbm_bandwidth_Bps", "hbm_capacity_bytes")
"""A device's compute facts: peak FLOP/s (float), HBM bandwidth in bytes/s (float), HBM capacity in bytes (int)."""


def check_device(device: Mapping[str, float | int | None] | None) -> dict[str, float | int]:
    """The known facts of a ``device`` mapping, checked and converted.

    Parameters
    ----------
    device : mapping or None
        Keys from :data:`DEVICE_FIELDS`; a value of None means unknown.

    Returns
    -------
    dict
        The fields whose value is known: the rates as floats, the capacity as an int.

    Raises
    ------
    ValueError
        If a key is unknown, a value is not a positive finite number, or the
        capacity is not a whole number of bytes.

    Examples
    --------
    >>> check_device({"peak_flops": 197e12, "hbm_bandwidth_Bps": None, "hbm_capacity_bytes": 16e9})
    {'peak_flops': 197000000000000.0, 'hbm_capacity_bytes': 16000000000}
    >>> check_device({"flops": 1.0})
    Traceback (most recent call last):
    ...
    ValueError: unknown device field 'flops'; known: peak_flops, hbm_bandwidth_Bps, hbm_capacity_bytes
    """
    if device is None:
        return {}
    if not isinstance(device, Mapping):
        raise ValueError(f"device must be a mapping of {', '.join(DEVICE_FIELDS)}, got {device!r}")
    facts: dict[str, float | int] = {}
    for field, value in device.items():
        if field not in DEVICE_FIELDS:
            raise ValueError(f"unknown device field {field!r}; known: {', '.join(DEVICE_FIELDS)}")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < math.inf:
            raise ValueError(f"device {field} must be a positive finite number, got {value!r}")
        if field == "hbm_capacity_bytes" and value != int(value):
            raise ValueError(f"device hbm_capacity_bytes must be a whole number of bytes, got {value!r}")
        facts[field] = int(value) if field == "hbm_capacity_bytes" else float(value)
    return facts

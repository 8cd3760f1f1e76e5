"""JSON text as ``json.dumps(data, indent=2, allow_nan=False)`` writes it, fast for long lists of flat records.

With an indent, the standard library encodes in Python, value by value: a pod's
statistics (thousands of devices, tens of thousands of links) take seconds. Here
each record of a list of records with the same keys (as ``--json`` holds per
device, link and step) is written by joining its fields' texts, its scalars encoded the
way :mod:`json` encodes them; everything else is left to :func:`json.dumps`. The
text is the same, character for character.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii
from typing import Any

__all__ = ["dumps"]

INDENT = "  "


def dumps(data: Any) -> str:
    """``json.dumps(data, indent=2, allow_nan=False)``, the same text, faster for lists of flat records.

    Raises
    ------
    ValueError
        For NaN or infinity, as :func:`json.dumps` with ``allow_nan=False``.

    Examples
    --------
    >>> data = {"devices": [{"device": 0, "name": "(0,1)", "finish_s": 1.5e-06, "late": None}], "n": 1}
    >>> dumps(data) == json.dumps(data, indent=2, allow_nan=False)
    True
    """
    return _value(data, 0)


def _value(value: Any, level: int) -> str:
    if isinstance(value, dict) and value and all(isinstance(key, str) for key in value):
        inner = "\n" + INDENT * (level + 1)
        items = (f"{encode_basestring_ascii(key)}: {_value(item, level + 1)}" for key, item in value.items())
        return "{" + inner + ("," + inner).join(items) + "\n" + INDENT * level + "}"
    if isinstance(value, list) and len(value) > 1 and all(type(item) is dict and item for item in value):
        keys = list(value[0])
        if all(isinstance(key, str) for key in keys) and all(list(item) == keys for item in value):
            return _records(value, keys, level)
    return json.dumps(value, indent=2, allow_nan=False).replace("\n", "\n" + INDENT * level)


def _records(records: list[dict[str, Any]], keys: list[str], level: int) -> str:
    """A list of dicts with the same keys, each written by joining its fields' texts."""
    inner, field = "\n" + INDENT * (level + 1), "\n" + INDENT * (level + 2)
    fields = [(f"{field}{encode_basestring_ascii(key)}: ", key) for key in keys]
    close = inner + "}"
    texts = ["{" + ",".join([head + _quick(item[key], level + 2) for head, key in fields]) + close for item in records]
    return "[" + inner + ("," + inner).join(texts) + "\n" + INDENT * level + "]"


def _quick(value: Any, level: int) -> str:
    """:func:`_scalar`, with the commonest cases (a finite float, an int) first.

    Examples
    --------
    >>> _quick(1.5, 0), _quick(3, 0), _quick(True, 0), _quick(-0.0, 0)
    ('1.5', '3', 'true', '-0.0')
    >>> dumps({"r": [{"x": 1.0}, {"x": float("inf")}]})
    Traceback (most recent call last):
    ...
    ValueError: Out of range float values are not JSON compliant: inf
    """
    kind = type(value)
    if kind is float and value - value == 0.0:  # finite (inf - inf and nan - nan are nan)
        return float.__repr__(value)
    if kind is int:
        return int.__repr__(value)
    return _scalar(value, level)


def _scalar(value: Any, level: int) -> str:
    kind = type(value)
    if kind is str:
        return encode_basestring_ascii(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if not math.isfinite(value):
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        return float.__repr__(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if (kind is list or kind is tuple) and value:
        inner = "\n" + INDENT * (level + 1)
        return "[" + inner + ("," + inner).join([_quick(item, level + 1) for item in value]) + "\n" + INDENT * level + "]"
    return _value(value, level)

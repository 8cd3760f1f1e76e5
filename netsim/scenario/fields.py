"""Field types written in human units ("45 GB/s", "1 us", "4 MiB", "197 TFLOP/s"), read as SI numbers, and the strict base model.

A bandwidth or a latency must carry its unit (``bandwidth: 45`` is refused with the fix,
``45 GB/s``): read as bytes per second and seconds it would be a billion times off.
Sizes (bytes) and compute rates (FLOP/s) may be bare numbers in their base unit.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from netsim.network import units


def _unit(parse, example: str):
    def check(value: Any) -> Any:
        if isinstance(value, str):
            return parse(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number or a string with a unit such as {example!r}")
        return value

    return BeforeValidator(check)


def _with_unit(parse, example: str, units_named: str, base: tuple[str, float, str]):
    """Like :func:`_unit`, but a bare number is refused: a bandwidth or a latency means nothing without its unit.

    The fix names the number with ``example``'s unit; a number that only makes sense in
    the base unit (``base``: its name, the scale of ``example``'s unit and whether base
    values are ``"above"`` or ``"below"`` it) is converted instead (``45e9`` -> ``45 GB/s``).
    """
    unit = example.split(" ", 1)[1]
    base_name, scale, side = base

    def check(value: Any) -> Any:
        shown = repr(value)
        if isinstance(value, str):
            try:
                value, shown = float(value), value.strip()  # a number YAML reads as text (45.0e9: YAML 1.1 wants 45.0e+9)
            except ValueError:
                return parse(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            in_base = value >= scale / 1000 if side == "above" else 0 < value <= scale * 1000
            fix = f"{value / scale:g} {unit}' if that is {base_name}" if in_base else f"{value:g} {unit}'"
            raise ValueError(f"{shown} has no unit: write '{fix} (units: {units_named})")
        raise ValueError(f"expected a string with a unit such as {example!r}")

    return BeforeValidator(check)


def _at_most(limit: float, what: str):
    def check(value: float) -> float:
        if value > limit:
            raise ValueError(f"{what} (got {value!r})")
        return value

    return AfterValidator(check)


def _at_least(limit: float, what: str):
    def check(value: float) -> float:
        if value < limit:
            raise ValueError(f"{what} (got {value!r})")
        return value

    return AfterValidator(check)


# The bounds keep every simulated time finite: a run moves at most 2**50 bytes per
# device at no less than 1 B/s, over hops of at most an hour.
Bytes = Annotated[int, _unit(units.parse_bytes, "64 MiB"), Field(gt=0), _at_most(2**50, "sizes above 1 PiB are not simulated")]
Bandwidth = Annotated[
    float,
    _with_unit(units.parse_bandwidth, "45 GB/s", "B/s, MB/s, GB/s, or bits: Gb/s", ("bytes per second", 1e9, "above")),
    Field(gt=0, allow_inf_nan=False),
    _at_least(1.0, "bandwidths below 1 B/s are not simulated"),
]
Flops = Annotated[
    float, _unit(units.parse_flops, "197 TFLOP/s"), Field(gt=0, allow_inf_nan=False), _at_least(1.0, "compute rates below 1 FLOP/s are not simulated")
]
_NO_LONGER_THAN_AN_HOUR = _at_most(3600.0, "durations above 1 h are not simulated")
Duration = Annotated[
    float, _with_unit(units.parse_duration, "1 us", "ns, us, ms, s", ("seconds", 1e-6, "below")), Field(ge=0, allow_inf_nan=False), _NO_LONGER_THAN_AN_HOUR
]
Seconds = Annotated[float, _unit(units.parse_duration, "1 us"), Field(ge=0, allow_inf_nan=False), _NO_LONGER_THAN_AN_HOUR]
"""A duration whose field is named in seconds (``seconds: 1e-5``): a bare number is in seconds."""


class Strict(BaseModel):
    """The base of every file format's model: unknown keys refused, values frozen, no silent conversion.

    Strict: a YAML string is not a number, a number not a flag, bytes not text.

    Examples
    --------
    >>> class Point(Strict):
    ...     x: int
    >>> Point(x=1).x
    1
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

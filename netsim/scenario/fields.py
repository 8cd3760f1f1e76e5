"""Field types written in human units ("45 GB/s", "1 us", "4 MiB", "197 TFLOP/s"), read as SI numbers, and the strict base model."""

from __future__ import annotations

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
    float, _unit(units.parse_bandwidth, "45 GB/s"), Field(gt=0, allow_inf_nan=False), _at_least(1.0, "bandwidths below 1 B/s are not simulated")
]
Flops = Annotated[
    float, _unit(units.parse_flops, "197 TFLOP/s"), Field(gt=0, allow_inf_nan=False), _at_least(1.0, "compute rates below 1 FLOP/s are not simulated")
]
Duration = Annotated[float, _unit(units.parse_duration, "1 us"), Field(ge=0, allow_inf_nan=False), _at_most(3600.0, "durations above 1 h are not simulated")]


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

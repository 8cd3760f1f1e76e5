"""The ``collective:`` section of a scenario: one model per operation, told apart by ``op``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator

from netsim.scenario.fields import Strict

Groups = list[list[int]] | None


def _check_axes(value: str | list[str] | None) -> str | list[str] | None:
    if value is not None and (not value or any(not name for name in ([value] if isinstance(value, str) else value))):
        raise ValueError("name one or more mesh axes, e.g. model or [data, model]")
    return value


Axes = Annotated[str | list[str] | None, AfterValidator(_check_axes)]


class AllGatherSpec(Strict):
    op: Literal["all_gather"]
    axis: int = 0
    tiled: bool = False
    axis_index_groups: Groups = None
    axes: Axes = None


class PsumScatterSpec(Strict):
    op: Literal["psum_scatter"]
    scatter_dimension: int = 0
    tiled: bool = False
    axis_index_groups: Groups = None
    axes: Axes = None


class PsumSpec(Strict):
    op: Literal["psum"]
    axis_index_groups: Groups = None
    axes: Axes = None


class AllToAllSpec(Strict):
    op: Literal["all_to_all"]
    split_axis: int = 0
    concat_axis: int = 0
    tiled: bool = False
    axis_index_groups: Groups = None
    axes: Axes = None


class PpermuteSpec(Strict):
    op: Literal["ppermute"]
    perm: list[list[int]]


_OPS = {"all_gather": AllGatherSpec, "psum_scatter": PsumScatterSpec, "psum": PsumSpec, "all_to_all": AllToAllSpec, "ppermute": PpermuteSpec}

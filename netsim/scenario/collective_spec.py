"""The ``collective:`` section of a scenario: one model per collective, told apart by ``op``.

The models are made from the op registry (:data:`netsim.semantics.ops.COLLECTIVES`):
each collective's fields are its ``jax.lax`` arguments with their defaults, and
``axis_index_groups`` and ``axes`` for those that take groups. This module only says
what type each field has in a file.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, Field, create_model

from netsim.scenario.fields import Strict
from netsim.semantics import ops as registry
from netsim.semantics.ops import REQUIRED

__all__ = ["SPECS", "Axes", "CollectiveSpec", "Groups"]

Groups = list[list[int]] | None


def _check_axes(value: str | list[str] | None) -> str | list[str] | None:
    if value is not None and (not value or any(not name for name in ([value] if isinstance(value, str) else value))):
        raise ValueError("name one or more mesh axes, e.g. model or [data, model]")
    return value


Axes = Annotated[str | list[str] | None, AfterValidator(_check_axes)]

FIELD_TYPES: dict[str, Any] = {
    "axis": int,
    "tiled": bool,
    "scatter_dimension": int,
    "split_axis": int,
    "concat_axis": int,
    "perm": list[list[int]],
    "axis_index_groups": Groups,
    "axes": Axes,
}
"""The type in a file of every field a collective takes."""


def _spec(collective: registry.Collective) -> type[Strict]:
    """The model of one collective's section, named as it is spelt (``all_to_all``: ``AllToAllSpec``)."""
    fields: dict[str, Any] = {"op": (Literal[collective.name], ...)}
    for name, default in collective.scenario_fields.items():
        fields[name] = (FIELD_TYPES[name], ... if default is REQUIRED else default)
    class_name = "".join(part.capitalize() for part in collective.name.split("_")) + "Spec"
    return create_model(class_name, __base__=Strict, __module__=__name__, **fields)


SPECS: dict[str, type[Strict]] = {name: _spec(c) for name, c in registry.COLLECTIVES.items()}
"""Each collective's model, by ``op``."""

CollectiveSpec = Annotated[Union[tuple(SPECS.values())], Field(discriminator="op")]  # noqa: UP007 (a union made of a tuple)
"""The ``collective:`` section: the model its ``op`` names."""

"""A collective is a one-op program: each bundled scenario over mesh axes, written as a program of its one
collective and lowered by :func:`netsim.programs.lowering.lower`, plays in the same time, bit for bit, on the
same transfers, and the program's values equal NumPy's."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import netsim
from netsim.programs.lowering import lower
from netsim.programs.model import CollectiveOp, Op, Program, Sharded
from netsim.programs.run import play_lowered
from netsim.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
OVER_AXES = sorted(
    path.name
    for path in (ROOT / "scenarios").glob("*.yaml")
    if (s := load_scenario(path)).mesh is not None and s.collective.axes and s.collective.op in ("all_gather", "psum_scatter", "psum", "all_to_all")
)


def one_op_program(path: Path) -> tuple[Program, object]:
    """The scenario's collective as the one op of a program on the scenario's mesh (each device's block as its shard)."""
    s = load_scenario(path)
    mesh, c = s.mesh_obj, s.collective
    axes = tuple([c.axes] if isinstance(c.axes, str) else c.axes)
    every = tuple(mesh.shape)
    elements = s.input.bytes_per_device // np.dtype(s.input.dtype).itemsize if s.input.shape is None else math.prod(s.input.shape)
    n = math.prod(mesh.shape.values())
    others = tuple(a for a in every if a not in axes)
    if c.op == "all_gather":  # each device's block, gathered along the axes
        array = Sharded((n * elements,), s.input.dtype, ((*others, *axes),))
        fields = {"axis": 0, "tiled": True}
    elif c.op == "all_to_all":  # each device's block cut into one piece per member along dimension 1
        group = math.prod(mesh.shape[a] for a in axes)
        array = Sharded((n * elements // group, group), s.input.dtype, ((*others, *axes), ()))
        fields = {"split_axis": 1, "concat_axis": 0, "tiled": True}
    else:  # psum, psum_scatter: each device's whole block, a partial sum over the axes
        array = Sharded((math.prod(mesh.shape[a] for a in others) * elements,), s.input.dtype, (others,), partial=axes)
        fields = {"scatter_dimension": 0, "tiled": True} if c.op == "psum_scatter" else {}
    op = Op.of("c", c.op, ("x",), "y", axes=axes, algorithm=s.resolved_algorithm, **fields)
    return Program(s.name, dict(mesh.shape), {"x": array}, (op,)), s


def test_the_bundled_scenarios_over_mesh_axes_are_all_here():
    assert len(OVER_AXES) >= 6, OVER_AXES


@pytest.mark.parametrize("name", OVER_AXES)
def test_a_collective_over_mesh_axes_plays_as_a_one_op_program(name, bundled_runs):
    program, scenario = one_op_program(ROOT / "scenarios" / name)
    assert isinstance(program.ops[0], CollectiveOp)
    collective = bundled_runs[Path(name).stem]  # the scenario run once per session (see conftest)
    lowered = lower(program, scenario.mesh_obj)
    playback, _ = play_lowered(lowered, scenario.topology_obj, None, values=False)
    assert len(lowered.schedule.transfers) == len(collective.leaves[0].schedule.transfers)
    assert playback.time == collective.time == scenario.expected.time_s
    assert lowered.ops[0].algorithm == collective.algorithm


ROW_MAJOR = [name for name in OVER_AXES if load_scenario(ROOT / "scenarios" / name).mesh.devices is None]
"""A Program has no device placement of its own: its mesh is laid row-major, as these scenarios' are."""


@pytest.mark.parametrize("name", ROW_MAJOR)
def test_the_one_op_program_computes_what_numpy_does(name):
    program, scenario = one_op_program(ROOT / "scenarios" / name)
    result = netsim.run_program(program, scenario.topology_obj, data="values")
    assert result.verified and result.time == scenario.expected.time_s


def test_an_all_to_all_within_one_dimension_is_refused_with_the_fix():
    """split_axis == concat_axis permutes blocks within the dimension (as JAX does): no sharding of the result says where
    they land, so a program refuses it rather than check the values against the wrong reference."""
    from netsim.programs.model import ProgramError

    x = Sharded((64,), "float32", (("X",),))
    op = Op.of("a2a", "all_to_all", ("x",), "y", axes=("X",), split_axis=0, concat_axis=0, tiled=True)
    with pytest.raises(ProgramError) as refused:
        netsim.run_program(Program("p", {"X": 4}, {"x": x}, (op,)), "tpu-v5e:2x2")
    assert str(refused.value) == "op 'a2a': concat_axis: dimension 0 is also split_axis; split one dimension and concatenate along another"

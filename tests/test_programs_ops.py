"""A program's ops as a tagged union (netsim.programs.ops): each kind's fields, Op.of, and what each op refuses."""

from __future__ import annotations

import dataclasses

import pytest

from netsim.network.device_mesh import Mesh
from netsim.network.topology import ring
from netsim.programs.files import load_program
from netsim.programs.lowering import lower
from netsim.programs.model import Op as ModelOp
from netsim.programs.model import Program, Sharded
from netsim.programs.ops import COMPUTE_CLASSES, CollectiveOp, Compute, Einsum, Matmul, Op, ProgramError
from netsim.semantics import ops as registry

BASE = ["name", "op", "inputs", "output", "after"]
BESIDES = "besides name, inputs, output and after it takes "


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def test_each_member_has_the_base_fields_then_its_own():
    assert _fields(Op) == BASE
    assert _fields(CollectiveOp) == [*BASE, "axes", "groups", "algorithm", "params"]
    assert _fields(Matmul) == [*BASE, "overlap", "algorithm", "efficiency"]
    assert _fields(Einsum) == [*BASE, "subscripts", "efficiency"]
    assert _fields(Compute) == [*BASE, "flops", "bytes", "seconds", "efficiency", "unit"]
    assert ModelOp is Op  # still importable where it was


def test_every_registry_op_has_a_class_and_each_compute_op_its_own():
    assert set(COMPUTE_CLASSES) == set(registry.COMPUTE_OPS)
    assert tuple(registry.COLLECTIVES) == CollectiveOp.KINDS
    assert {name: cls.KINDS for name, cls in COMPUTE_CLASSES.items()} == {"matmul": ("matmul",), "einsum": ("einsum",), "compute": ("compute",)}


@pytest.mark.parametrize("name", list(registry.OPS))
def test_of_picks_the_class_from_the_registry(name):
    op = Op.of("x", name)
    assert type(op) is (CollectiveOp if name in registry.COLLECTIVES else COMPUTE_CLASSES[name])
    assert op.op == name and op.inputs == () and op.output is None and op.after == ()
    assert list(op.program_fields()) == list(registry.OPS[name].program)


def test_of_gives_each_kind_its_fields():
    gather = Op.of("g", "all_gather", ("A",), "B", after=("w",), axes=("X",), axis=1, tiled=True, algorithm="ring")
    assert gather == CollectiveOp("g", "all_gather", ("A",), "B", after=("w",), axes=("X",), algorithm="ring", params={"axis": 1, "tiled": True})
    assert (gather.axes, gather.groups, gather.algorithm, gather.params) == (("X",), (), "ring", {"axis": 1, "tiled": True})
    assert Op.of("mm", "matmul", ("A", "B"), "C", overlap="collective") == Matmul("mm", ("A", "B"), "C", overlap="collective")
    assert Op.of("e", "einsum", ("A", "B"), "C", subscripts="ij,jk->ik").subscripts == "ij,jk->ik"
    work = Op.of("w", "compute", ("C",), flops=1e9, bytes=1e6)
    assert (work.op, work.flops, work.bytes, work.seconds, work.output) == ("compute", 1e9, 1e6, None, None)


def test_a_collective_takes_its_registry_arguments_with_jax_defaults():
    assert Op.of("s", "psum", ("A",), "B", axes=("X",)).params == {}
    assert Op.of("rs", "psum_scatter", ("A",), "B", axes=("X",), tiled=True).params == {"scatter_dimension": 0, "tiled": True}
    assert Op.of("a", "all_to_all", ("A",), "B", axes=("X",), concat_axis=1).params == {"split_axis": 0, "concat_axis": 1, "tiled": False}
    assert Op.of("p", "ppermute", ("A",), "B", axes=("X",)).params == {"perm": ()}  # required, but the program's check names it
    for name, collective in registry.COLLECTIVES.items():
        assert list(Op.of("x", name).params) == list(collective.arguments)


def test_a_collective_refuses_a_parameter_it_does_not_take():
    with pytest.raises(ProgramError) as error:
        Op.of("s", "psum", ("A",), "B", axes=("X",), tiled=True)
    assert str(error.value) == "op 's': tiled: psum takes no tiled; besides name, inputs, output and after it takes algorithm, axes, groups"
    assert (error.value.op, error.value.field) == ("s", "tiled")
    with pytest.raises(ProgramError) as error:
        Op.of("g", "all_gather", ("A",), "B", axes=("X",), scatter_dimension=0)
    assert str(error.value) == (
        "op 'g': scatter_dimension: all_gather takes no scatter_dimension; besides name, inputs, output and after it takes algorithm, axes, axis, groups, tiled"
    )
    with pytest.raises(ProgramError) as error:
        CollectiveOp("a", "all_to_all", ("A",), "B", axes=("X",), params={"axis": 1})
    assert str(error.value) == "op 'a': axis: all_to_all takes no parameter 'axis'; its parameters are split_axis, concat_axis, tiled"
    with pytest.raises(ProgramError) as error:
        CollectiveOp("g", "all_gather", params={"axes": ("X",)})  # a field of the op, not a parameter
    assert str(error.value) == "op 'g': axes: all_gather takes no parameter 'axes'; its parameters are axis, tiled"


def test_ppermute_takes_no_groups_nor_algorithm():
    with pytest.raises(ProgramError) as error:
        Op.of("p", "ppermute", ("A",), "B", groups=((0, 1),), perm=((0, 1),))
    assert str(error.value) == "op 'p': groups: ppermute takes no groups; besides name, inputs, output and after it takes axes, perm"
    with pytest.raises(ProgramError, match=r"^op 'p': algorithm: ppermute takes no algorithm; "):
        CollectiveOp("p", "ppermute", ("A",), "B", axes=("X",), algorithm="ring")


@pytest.mark.parametrize(
    ("name", "fields", "message"),
    [
        ("compute", {"axes": ("X",)}, "op 'c': axes: compute takes no axes; " + BESIDES + "bytes, efficiency, flops, seconds, unit"),
        ("compute", {"tiled": True}, "op 'c': tiled: compute takes no tiled; " + BESIDES + "bytes, efficiency, flops, seconds, unit"),
        ("matmul", {"subscripts": "ij,jk->ik"}, "op 'c': subscripts: matmul takes no subscripts; " + BESIDES + "algorithm, efficiency, overlap"),
        ("einsum", {"overlap": "collective"}, "op 'c': overlap: einsum takes no overlap; " + BESIDES + "efficiency, subscripts"),
        ("matmul", {"groups": ((0, 1),)}, "op 'c': groups: matmul takes no groups; " + BESIDES + "algorithm, efficiency, overlap"),
    ],
)
def test_a_compute_op_refuses_what_it_does_not_take(name, fields, message):
    with pytest.raises(ProgramError) as error:
        Op.of("c", name, **fields)
    assert str(error.value) == message


def test_an_unknown_op_and_a_tag_its_class_does_not_hold_are_refused():
    with pytest.raises(ProgramError) as error:
        Op.of("b", "broadcast")
    expected = "all_gather, psum_scatter, psum, all_to_all, ppermute, matmul, einsum, compute"
    assert str(error.value) == f"op 'b': op: unknown op 'broadcast'; expected one of {expected}"
    with pytest.raises(ProgramError) as error:
        CollectiveOp("m", "matmul")
    assert str(error.value) == "op 'm': op: CollectiveOp holds all_gather, psum_scatter, psum, all_to_all, ppermute, not 'matmul'"
    with pytest.raises(ProgramError) as error:
        Op("g", "all_gather")
    assert str(error.value) == "op 'g': op: Op is the union's base (build an op with Op.of), not 'all_gather'"
    with pytest.raises(TypeError):
        Matmul("mm", "einsum", ("A", "B"), "C")  # the tag of a one-op class is not given  # type: ignore[arg-type]


def test_ops_are_frozen_and_hashable():
    gather = Op.of("g", "all_gather", ("A",), "B", axes=("X",), tiled=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        gather.axes = ("Y",)  # type: ignore[misc]
    assert len({gather, Op.of("g", "all_gather", ("A",), "B", axes=("X",), tiled=True), Compute("w", seconds=1.0)}) == 2
    assert gather != Op.of("g", "all_gather", ("A",), "B", axes=("X",), axis=1, tiled=True)


def test_over_devices_says_whether_a_collective_runs_over_mesh_axes():
    assert not Op.of("g", "all_gather", ("A",), "B", axes=("X",)).over_devices
    assert Op.of("g", "all_gather", ("A",), "B", groups=((0, 1), (2, 3))).over_devices
    assert Op.of("p", "ppermute", ("A",), "B", perm=((0, 1), (1, 0))).over_devices
    assert not Op.of("p", "ppermute", ("A",), "B", axes=("X",), perm=((0, 1), (1, 0))).over_devices


def test_a_program_file_gives_each_op_its_class_with_the_file_defaults():
    files = ("allgather_matmul", "collective_matmul", "megatron_mlp")
    ops = {op.name: op for file in files for op in load_program(f"scenarios/programs/{file}.yaml").program.ops}
    kinds = {name: type(op).__name__ for name, op in ops.items()}
    assert set(kinds.values()) == {"CollectiveOp", "Matmul"}
    for op in ops.values():
        if isinstance(op, CollectiveOp) and "tiled" in op.params:
            assert op.params["tiled"] is True  # a program file's collectives run tiled unless it says otherwise


def test_the_lowered_op_says_what_analysis_reads_without_the_classes():
    arrays = {"A": Sharded((4, 8), "float32", ((), ("X",))), "B": Sharded((8, 2))}
    ops = (
        Op.of("cm", "matmul", ("A", "B"), "C", overlap="collective"),
        Op.of("w", "compute", ("C",), seconds=2e-6),
        Op.of("g", "all_gather", ("A",), "A2", axes=("X",), axis=1, tiled=True),
    )
    chips = ring(4).with_device({"peak_flops": 1e12, "hbm_bandwidth_Bps": 1e11})
    matmul, work, total = lower(Program("p", {"X": 4}, arrays, ops), Mesh({"X": 4}, chips)).ops
    assert (matmul.collective, matmul.collective_matmul, matmul.seconds) == (False, True, None)
    assert (work.collective, work.collective_matmul, work.seconds) == (False, False, 2e-6)
    assert (total.collective, total.collective_matmul, total.seconds) == (True, False, None)

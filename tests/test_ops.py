"""The op registry (netsim.semantics.ops) is complete and consistent, and everything derived from it agrees with it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import expected_all_gather, expected_all_to_all, expected_ppermute, expected_psum, expected_psum_scatter

from netsim.algorithms.registry import ALGORITHMS, PATTERNS, check_algorithm, default_algorithm
from netsim.analysis.closed_forms import COST_MODELS
from netsim.analysis.closed_forms.bounds import bytes_in
from netsim.analysis.closed_forms.terms import canonical_collective
from netsim.cli.schema import schema
from netsim.programs.files import OpSpec
from netsim.programs.hlo import COLLECTIVES as HLO_COLLECTIVES
from netsim.programs.hlo.opcodes import OPCODES
from netsim.programs.hlo.translate import HLO_TO_JAX
from netsim.programs.model import COLLECTIVE_OPS, COMPUTE_OPS, CollectiveOp, Sharded
from netsim.result import busbw_factor
from netsim.scenario.collective_spec import FIELD_TYPES, SPECS
from netsim.semantics.ops import COLLECTIVES, OPS, REQUIRED, collective, hlo_collectives
from netsim.semantics.ops import COMPUTE_OPS as COMPUTE

GROUPS = [[0, 2], [3, 1]]
# Per collective: arguments for a stacked input of shape (4, 4, 6) over GROUPS, and the independent NumPy reference of JAX's semantics (conftest).
REFERENCES = {
    "all_gather": ({"axis": 1, "tiled": True}, lambda x: expected_all_gather(x, 1, True, GROUPS)),
    "psum_scatter": ({"scatter_dimension": 1, "tiled": True}, lambda x: expected_psum_scatter(x, 1, True, GROUPS)),
    "psum": ({}, lambda x: expected_psum(x, GROUPS)),
    "all_to_all": ({"split_axis": 1, "concat_axis": 0, "tiled": True}, lambda x: expected_all_to_all(x, 1, 0, True, GROUPS)),
    "ppermute": ({"perm": [(0, 1), (1, 0)]}, lambda x: expected_ppermute(x, [(0, 2), (2, 0), (3, 1), (1, 3)])),
}


def test_every_collective_has_a_reference_here():
    assert sorted(REFERENCES) == sorted(COLLECTIVES)


@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_the_registered_rule_gives_jax_s_answer(name):
    arguments, expected = REFERENCES[name]
    x = np.random.default_rng(3).integers(-100, 100, (4, 4, 6), dtype=np.int32)
    layout = COLLECTIVES[name].check(x, GROUPS, **arguments)
    assert isinstance(layout, COLLECTIVES[name].layout)
    np.testing.assert_array_equal(layout.reference(x), expected(x))


def test_check_names_a_wrong_or_missing_argument():
    with pytest.raises(ValueError, match=r"^all_gather takes no argument 'split_axis'; it takes axis, tiled$"):
        COLLECTIVES["all_gather"].check(np.zeros((2, 2)), split_axis=0)
    with pytest.raises(ValueError, match=r"^ppermute needs perm$"):
        COLLECTIVES["ppermute"].check(np.zeros((2, 2)))


@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_every_collective_has_an_algorithm_a_closed_form_and_hlo_opcodes(name):
    c = COLLECTIVES[name]
    assert c.algorithm in ALGORITHMS
    assert default_algorithm(c.pattern) == c.algorithm
    if c.pattern in PATTERNS:
        assert check_algorithm(c.pattern, 4) == c.algorithm
    else:
        assert (c.pattern, c.algorithm) == ("permute", "direct")  # planned by netsim.algorithms.direct.permutation
    assert any(m.collective == c.closed_form for m in COST_MODELS)
    assert {canonical_collective(a) for a in (name, *c.aliases)} == {c.closed_form}
    assert c.hlo_opcodes and set(c.hlo_opcodes) <= OPCODES
    assert set(c.hlo_dimension) <= set(c.arguments)


def test_the_tables_derived_from_the_registry_list_exactly_its_ops():
    assert COLLECTIVE_OPS == tuple(COLLECTIVES) == ("all_gather", "psum_scatter", "psum", "all_to_all", "ppermute")
    assert COMPUTE_OPS == tuple(COMPUTE) == ("matmul", "einsum", "compute")
    assert set(OpSpec.model_fields["op"].annotation.__args__) == set(OPS)
    assert list(SPECS) == list(COLLECTIVES)
    assert hlo_collectives() == HLO_TO_JAX
    assert set(HLO_COLLECTIVES) == set(HLO_TO_JAX)
    assert HLO_TO_JAX["reduce-scatter"] == "psum_scatter" and HLO_TO_JAX["ragged-all-to-all"] == "all_to_all"


def test_the_json_schemas_list_exactly_the_registry_s_ops():
    assert schema("run")["properties"]["collective"]["enum"] == list(COLLECTIVES)
    assert schema("estimate")["properties"]["collective"]["enum"] == list(COLLECTIVES)
    program = schema("program")["properties"]
    assert program["ops"]["items"]["properties"]["op"]["enum"] == list(OPS)
    assert program["collectives"]["items"]["properties"]["op"]["enum"] == list(hlo_collectives())


@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_a_scenario_s_collective_section_takes_the_registry_s_fields_and_defaults(name):
    fields = SPECS[name].model_fields
    assert set(fields) == {"op", *COLLECTIVES[name].scenario_fields}
    assert set(COLLECTIVES[name].arguments) <= set(FIELD_TYPES)
    for field, default in COLLECTIVES[name].scenario_fields.items():
        assert fields[field].is_required() if default is REQUIRED else fields[field].default == default


@pytest.mark.parametrize("name", list(OPS))
def test_a_program_file_op_takes_the_registry_s_fields_and_defaults(name):
    program = OPS[name].program
    op = OpSpec(name="o", op=name).to_op()
    own = {f.name for f in dataclasses.fields(op)} | set(op.params if isinstance(op, CollectiveOp) else ())
    assert set(program) <= own and set(program) <= set(OpSpec.model_fields)
    assert op.program_fields() == dict(program)
    if name in COLLECTIVES:
        assert set(COLLECTIVES[name].arguments) <= set(program) and "axes" in program


def test_busbw_factors_follow_nccl_tests_and_received_bytes_the_counting_argument():
    n = 8
    assert {c: busbw_factor(c, n) for c in COLLECTIVES} == {"all_gather": 7 / 8, "psum_scatter": 7 / 8, "psum": 14 / 8, "all_to_all": 7 / 8, "ppermute": 1.0}
    assert busbw_factor("all_sum", n) == busbw_factor("all_reduce", n) == 14 / 8
    assert busbw_factor("psum", 1) == 0.0
    assert {c: bytes_in(c, 4, 100.0) for c in COLLECTIVES} == {"all_gather": 300.0, "psum_scatter": 75.0, "psum": 100.0, "all_to_all": 75.0, "ppermute": 0.0}


def test_aliases_resolve_and_an_unknown_name_is_refused():
    assert collective("all_sum") is collective("all_reduce") is COLLECTIVES["psum"]
    assert collective("reduce_scatter") is COLLECTIVES["psum_scatter"]
    with pytest.raises(ValueError, match=r"^unknown collective 'pbroadcast'; expected one of all_gather, psum_scatter, psum, all_to_all, ppermute$"):
        collective("pbroadcast")


MESH = {"X": 2, "Y": 3}  # row-major: device = 3x + y
ALONG_Y = [[0, 1, 2], [3, 4, 5]]
# Per collective: an array split over the mesh, run over Y with the program's arguments.
SHARDED = {
    "all_gather": (Sharded((4, 6), sharding=((), ("Y",))), {"axis": 1, "tiled": True}, ((), ())),
    "psum_scatter": (Sharded((6, 4), partial=("Y",)), {"scatter_dimension": 0, "tiled": True}, (("Y",), ())),
    "psum": (Sharded((6, 4), partial=("Y",)), {}, ((), ())),
    "all_to_all": (Sharded((6, 6), sharding=(("Y",), ())), {"split_axis": 1, "concat_axis": 0, "tiled": True}, ((), ("Y",))),
    "ppermute": (Sharded((6,), sharding=(("Y",),)), {"perm": [(0, 1), (1, 2), (2, 0)]}, (("Y",),)),
}


@pytest.mark.parametrize("name", list(COLLECTIVES))
def test_a_collective_s_sharding_rule_agrees_with_its_layout(name):
    x, arguments, sharding = SHARDED[name]
    c = COLLECTIVES[name]
    out = c.sharded(x, MESH, ("Y",), **arguments)
    assert out.sharding == sharding and out.partial == ()
    local = np.zeros((6, *x.local_shape(MESH)), np.int8)
    assert out.local_shape(MESH) == c.check(local, ALONG_Y, **arguments).output_shape
    if c.grouped:
        assert c.grouped_shape(x.local_shape(MESH), 3, **arguments) == c.check(local, ALONG_Y, **arguments).output_shape

"""Several slices: hosts turned to fit the slice, hierarchical labels and bounds, calibrated terms on every slice."""

from __future__ import annotations

import pytest

import netsim
from netsim.scenario import scenario_from_data


def _dcn_psum(topology: str, ici: int) -> netsim.Result:
    data = {
        "name": "s",
        "topology": topology,
        "mesh": {"shape": {"dcn": 2, "ici": ici}},
        "collective": {"op": "psum", "axes": ["dcn"]},
        "input": {"bytes_per_device": "1 MiB", "dtype": "float32"},
        "data": "none",
    }
    return netsim.simulate(scenario_from_data(data, "s.yaml"))


@pytest.mark.parametrize("generation", ["tpu-v5e", "tpu-v6e"])
def test_a_2x4_slice_is_one_host_of_8_chips_either_way_round(generation):
    wide, tall = _dcn_psum(f"{generation}:2x4x2slices", 8), _dcn_psum(f"{generation}:4x2x2slices", 8)
    assert wide.topology_obj.device_host == tall.topology_obj.device_host == (0,) * 8 + (1,) * 8
    assert wide.time == tall.time

"""Did-you-mean for the spellings people bring: libtpu's slice names, a dash for the colon, x2slice, a mesh axis, a study's field."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli.main import app

runner = CliRunner()
HLO = ROOT / "scenarios" / "programs" / "hlo" / "mlp.txt"
BUNDLED = (
    "ring16, ring4, ring8, torus4x4, tpu-v3-32x32, tpu-v3-4x4, tpu-v4-4x4x4, tpu-v5e-16x16, tpu-v5e-8x16, tpu-v5e-8x4, tpu-v5p-4x4x4,"
    " tpu-v6e-16x16, tpu7x-2x2x1, tpu7x-4x4x4; or a TPU slice such as tpu-v5e:4x4"
)
KNOWN = "known: tpu-v4, tpu-v5p, tpu-v5e, tpu-v6e, tpu-v3, tpu-v2, tpu7x (write e.g. tpu-v5e:8x16)"


@pytest.mark.parametrize(
    "topology, message",
    [
        ("v5e:4x4", f"unknown TPU generation 'v5e' in 'v5e:4x4'; did you mean tpu-v5e:4x4?; {KNOWN}"),
        ("tpuv5e:4x4", f"unknown TPU generation 'tpuv5e' in 'tpuv5e:4x4'; did you mean tpu-v5e:4x4?; {KNOWN}"),
        ("TPU-v5e:4x4", f"unknown TPU generation 'TPU-v5e' in 'TPU-v5e:4x4'; did you mean tpu-v5e:4x4?; {KNOWN}"),
        (
            "tpu-v5e:4x4x2slice",
            "cannot read the slice shape '4x4x2slice' in 'tpu-v5e:4x4x2slice'; did you mean tpu-v5e:4x4x2slices?;"
            " write the axis sizes joined by 'x', e.g. tpu-v5e:4x4",
        ),
        ("tpu-v5e-2x4", f"--topology tpu-v5e-2x4: no topology file 'tpu-v5e-2x4'; did you mean tpu-v5e:2x4? bundled ones are: {BUNDLED}"),
        ("torus4x4x4", f"--topology torus4x4x4: no topology file 'torus4x4x4'; bundled ones are: {BUNDLED}"),  # not torus4x4: another size
    ],
)
def test_a_misspelt_slice_gets_the_name_it_means(topology, message):
    out = runner.invoke(app, ["program", "--hlo", str(HLO), "--topology", topology])
    assert out.exit_code == 2
    assert out.output == f"error: {message}\n"


def test_a_misspelt_mesh_axis_and_study_field_get_did_you_mean(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: s\ntopology: tpu-v5e:4x4\nmesh: {shape: {data: 4, model: 4}}\ncollective: {op: all_gather, axes: [modle]}\n"
        "input: {bytes_per_device: 1 KiB, dtype: float32}\n"
    )
    out = runner.invoke(app, ["run", str(scenario)])
    assert out.exit_code == 2
    assert out.output == f"error: {scenario}: collective.axes: no mesh axis 'modle'; did you mean model?; the mesh has data, model\n"
    study = tmp_path / "st.yaml"
    study.write_text(yaml.safe_dump({"name": "st", "base": str(ROOT / "scenarios" / "allgather_ring8.yaml"), "grid": {"input.bytes_per_devic": ["1 KiB"]}}))
    out = runner.invoke(app, ["sweep", str(study), "-o", str(tmp_path / "out")])
    assert out.exit_code == 2
    assert out.output == (
        f"error: {study}: grid.input.bytes_per_devic: unknown field 'bytes_per_devic';"
        " allowed in input: shape, bytes_per_device, dtype, values; did you mean bytes_per_device?\n"
    )

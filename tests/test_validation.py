"""docs/validation.md is what scripts/validation.py makes, and the TPU presets carry the terms it derives."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from conftest import load_script

from netsim.network.calibration import CALIBRATIONS
from netsim.programs.hlo.maxtext import MODELS

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def validation():
    return load_script("scripts/validation.py", "validation")


@pytest.fixture(scope="module")
def timed(validation):
    return {row.label: validation.run(row) for row in validation.ROWS}


def test_the_doc_is_what_the_script_makes(validation, timed):
    assert (ROOT / "docs" / "validation.md").read_text() == validation.render(timed), "run: python scripts/validation.py"


def test_the_presets_carry_the_terms_the_measurements_give(validation, timed):
    for name, (efficiency, fixed) in validation.rounded(validation.derive(timed)).items():
        assert (CALIBRATIONS[name].link_efficiency, CALIBRATIONS[name].collective_overhead_s) == (efficiency, fixed), name
        assert set(CALIBRATIONS[name].derived_from) == {row.label for row in validation.ROWS if row.derive and row.label.startswith(name)} | (
            {"tpu-v5e 8x16 10 MB", *(f"MaxText {model} v5e-256" for model in MODELS)} if name == "tpu-v5e" else set()
        )  # (v5e's matmul efficiency: MaxText's four whole steps, tests/test_validation_steps.py)


def test_calibrated_rows_meet_the_target_and_nominal_is_the_ideal_model(timed):
    errors = [abs(t.error) for t in timed.values()]
    assert max(errors) <= 0.20 and statistics.median(errors) <= 0.10
    # the figures for the ideal model: 11.7, 38.0, 142.8 and 2240 us on TPU7x, 560 and 4.46 us on v5e
    nominal_us = {label: round(t.nominal_s * 1e6, 1) for label, t in timed.items()}
    assert [nominal_us[f"tpu7x 2x2x1 {s}"] for s in ("256 KiB", "1 MiB", "4 MiB", "64 MiB")] == [11.7, 38.0, 142.8, 2240.0]
    assert (nominal_us["tpu-v5e 8x4 8.4 MB"], nominal_us["tpu-v5e 8x4 32 kB"]) == (560.2, 4.5)


def test_the_guides_bandwidth_converts_to_the_published_times(validation):
    # 256 KiB per device: transferred = 65536 x 3 x 4 x 2 B at 71.77 GB/s = 21.9 us
    assert round(validation.ROWS[0].measured_s * 1e6, 1) == 21.9
    assert round(validation.ROWS[4].measured_s * 1e6) == 2252

"""Pictures that read at a glance: a program's timeline coloured and named by op, a colour key in animations, progress lines in logs."""

from __future__ import annotations

import numpy as np
from conftest import ROOT
from matplotlib.colors import to_hex
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app
from netsim.teaching import timeline
from netsim.teaching.animate_axes import animation

runner = CliRunner()


def _drawn(monkeypatch, result, tmp_path):
    """The figure save_timeline draws for ``result``, and its one axes."""
    figures = []
    monkeypatch.setattr(timeline, "save_figure", lambda figure, path: figures.append(figure) or path)
    timeline.save_timeline(result, tmp_path / "t.png")
    (figure,) = figures
    return figure, figure.axes[0]


def test_a_program_timeline_is_coloured_and_named_by_op_with_a_legend_that_matches(monkeypatch, tmp_path):
    result = netsim.run_program(ROOT / "scenarios/programs/fsdp_two_layers.yaml")
    _, ax = _drawn(monkeypatch, result, tmp_path)
    legend = {text.get_text(): to_hex(patch.get_facecolor()) for text, patch in zip(ax.get_legend().get_texts(), ax.get_legend().get_patches(), strict=True)}
    assert legend == dict(zip(["gather_W1", "gather_W2", "layer1", "layer2"], timeline.OP_PALETTE, strict=False))
    hatched = {to_hex(p.get_facecolor()) for p in ax.patches if p.get_hatch() == "//"}
    solid = {to_hex(p.get_facecolor()) for p in ax.patches if not p.get_hatch() and p.get_height() == 0.72}
    assert hatched == {legend["layer1"], legend["layer2"]}  # the compute bars: their ops' colours, as the legend says
    assert solid == {legend["gather_W1"], legend["gather_W2"]}  # the messages: their collective's colour
    names = [t.get_text() for t in ax.texts]
    assert names.count("layer1") == names.count("layer2") == len(timeline.compute_rows(result)) == result.n_devices  # every bar says its op


def test_a_collectives_timeline_keeps_its_device_colours(monkeypatch, tmp_path):
    result = netsim.all_gather(np.zeros((4, 64), np.float32), algorithm="ring")
    _, ax = _drawn(monkeypatch, result, tmp_path)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [f"device {k}" for k in range(4)]


def test_a_torus_animation_carries_a_colour_key():
    result = netsim.all_gather(np.zeros((16, 2), np.float32), topology=netsim.torus((4, 4)))
    drawing = animation(result, frames=2)._drawing()
    texts = [t.get_text() for t in drawing.figure.texts]
    assert "colour = device:" in texts
    key = [str(k) for k in range(16)]
    assert texts[texts.index("colour = device:") + 1 :][:16] == key
    swatches = [to_hex(p.get_facecolor()) for p in drawing.figure.artists]
    assert swatches == [to_hex(c) for c in drawing.colours]


def test_animate_says_how_far_it_got_when_stderr_is_not_a_terminal(monkeypatch, tmp_path):
    from netsim.cli import console

    monkeypatch.setattr(console, "PROGRESS_EVERY_S", 0.0)
    out = runner.invoke(app, ["animate", str(ROOT / "scenarios/allgather_ring4_neighbours.yaml"), "-o", str(tmp_path / "a.gif"), "--frames", "2"])
    assert out.exit_code == 0, out.output
    lines = [line for line in out.output.splitlines() if line.startswith("drawing frames: ")]
    assert [line.split()[2] for line in lines] == ["1/2", "2/2"]

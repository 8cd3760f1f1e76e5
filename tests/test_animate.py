"""Animation files, the notebook display, the timeline chart and their CLI commands."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app
from netsim.teaching.timeline import timeline_rows

pytest.importorskip("matplotlib", reason="drawing needs the teaching extra (matplotlib)")
Image = pytest.importorskip("PIL.Image", reason="GIFs need Pillow")

runner = CliRunner()
RING4 = str(ROOT / "scenarios" / "allgather_ring4_neighbours.yaml")
STRIDED = str(ROOT / "scenarios" / "allgather_ring4_strided.yaml")


def test_cli_writes_a_gif_with_the_frames_asked_for(tmp_path):
    out = tmp_path / "allgather.gif"
    result = runner.invoke(app, ["animate", RING4, "-o", str(out), "--frames", "3"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"wrote {out} (3 frames")
    with Image.open(out) as gif:
        assert gif.n_frames == 3
        assert gif.size[0] > 400 and gif.size[1] > 300
    assert list(tmp_path.iterdir()) == [out]  # no partial file left behind


def test_html_page_is_self_contained_and_holds_the_runs_events(tmp_path):
    out = tmp_path / "page.html"
    result = runner.invoke(app, ["animate", RING4, "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "data:image/png" not in page  # the browser draws every moment from the events
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page)  # nothing fetched from anywhere
    data = json.loads(re.search(r'<script type="application/json" id="run-data">(.*?)</script>', page, re.S).group(1))
    ran = netsim.simulate(netsim.load_scenario(RING4))
    assert data["time_s"] == ran.time and len(data["transfers"]["src"]) == len(ran.leaves[0].schedule.transfers)
    for role in ("play", "prev", "next", "prevstep", "nextstep", "slider"):
        assert f"'{role}'" in page  # the player's controls


def test_result_animate_renders_inline_html_for_notebooks():
    movie = netsim.animate(netsim.all_gather(np.arange(4), algorithm="ring"), frames=2)
    fragment = movie._repr_html_()
    assert "<!DOCTYPE" not in fragment and fragment.count("data:image/png;base64,") == 2
    assert 'class="nsp"' in fragment and "<script>" in fragment


def test_cli_refuses_unknown_outputs_and_mp4_without_ffmpeg(tmp_path, monkeypatch):
    bad = tmp_path / "movie.avi"
    result = runner.invoke(app, ["animate", RING4, "-o", str(bad)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: --output {str(bad)!r}: the file name must end in .gif, .mp4, .html"
    monkeypatch.setattr("shutil.which", lambda name: None)
    mp4 = tmp_path / "movie.mp4"
    result = runner.invoke(app, ["animate", RING4, "-o", str(mp4), "--frames", "2"])
    assert result.exit_code == 2
    assert "error: cannot write" in result.output and ".mp4 needs ffmpeg on the PATH" in result.output
    result = runner.invoke(app, ["timeline", RING4, "-o", str(tmp_path / "chart.jpg")])
    assert result.exit_code == 2
    assert list(tmp_path.iterdir()) == []


def test_timeline_rows_show_contention_and_idle_links():
    result = netsim.simulate(netsim.load_scenario(STRIDED))
    rows = dict(timeline_rows(result))
    assert len(rows) == 8  # every link direction of the ring of 4, idle ones included
    busy = {link: bars for link, bars in rows.items() if bars}
    assert {(u, v) for u, v, _ in busy} == {(0, 1), (1, 2), (2, 3), (3, 0)}
    s, bandwidth = 1 << 20, 45e9
    for bars in busy.values():
        first, second = sorted(bars, key=lambda b: b.start_s)
        # two 1 MiB messages share the link: the second starts as the first ends
        assert first.end_s - first.start_s == pytest.approx(s / bandwidth, rel=1e-9)
        assert second.start_s == pytest.approx(first.end_s, rel=1e-12)
    assert max(b.end_s + b.latency_s for bars in busy.values() for b in bars) == pytest.approx(result.time, rel=1e-12)


def test_cli_timeline_writes_a_png(tmp_path):
    out = tmp_path / "timeline.png"
    result = runner.invoke(app, ["timeline", STRIDED, "-o", str(out)])
    assert result.exit_code == 0, result.output
    with Image.open(out) as png:
        assert png.format == "PNG" and png.size[0] > 600

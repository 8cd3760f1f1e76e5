"""The HTML player at 1200x900 in headless Chromium: controls visible without scrolling, the title once;
the animation draws a waiting chunk hollow (no device shares its look), the timeline colours bars by device."""

from __future__ import annotations

import shutil

import pytest

import netsim
from netsim.teaching.timeline import timeline_rows

pytest.importorskip("matplotlib", reason="drawing needs the teaching extra (matplotlib)")


def test_timeline_bars_take_the_colour_of_the_device_whose_data_they_carry():
    result = netsim.simulate(netsim.load_scenario("scenarios/allgather_ring4_strided.yaml"))  # groups [0, 2] and [1, 3]
    schedule = result.leaves[0].schedule
    bars = [bar for _, row in timeline_rows(result) for bar in row]
    for bar in bars:
        t = schedule.transfers[bar.transfer]
        group = next(g for g in schedule.groups if t.src in g)
        assert bar.colour == group[t.key[0]]
        if t.step == 0 and t.src == group[t.key[0]]:
            assert bar.colour == t.src  # a device's first send is its own data
    assert {bar.colour for bar in bars} == {0, 1, 2, 3}  # the two groups' blocks never share a colour


def test_a_waiting_chunk_is_drawn_hollow_in_its_device_colour():
    from netsim.teaching.animate import animate

    result = netsim.simulate(netsim.load_scenario("scenarios/psum_torus4x4_link_down.yaml"))  # a detour: chunks queue
    animation = animate(result, frames=30)
    drawer = animation._drawing()
    waiting = next(f for f in animation.frames if any(fl.waiting for fl in f.flights))
    drawer.draw(waiting)
    faces = drawer.chunks.get_facecolors()
    for flight, face in zip(waiting.flights, faces, strict=True):
        assert (tuple(face[:3]) == (1.0, 1.0, 1.0)) == flight.waiting


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium was not found (apt-get install chromium)")
def test_player_controls_are_visible_at_1200x900_and_the_title_is_shown_once(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright package (pip install 'netsim[browser-tests]')")
    page_file = tmp_path / "psum.html"
    netsim.animate(netsim.simulate(netsim.load_scenario("scenarios/psum_torus4x4_row.yaml")), frames=4).save(page_file)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(page_file.as_uri())
            page.screenshot(path=str(tmp_path / "shot.png"))
            for role in ("play", "nextstep", "slider", "speed"):
                box = page.locator(f'[data-role="{role}"]').bounding_box()
                assert box is not None and box["y"] + box["height"] <= 900, f"{role} is below the fold: {box}"
            assert page.locator("body").inner_text().count("psum_torus4x4_row") == 1  # the title, once
        finally:
            browser.close()

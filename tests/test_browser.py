"""The HTML animation (the browser player, drawing the run's events) in a real browser: headless Chromium plays it to the end without a JavaScript error.

Needs Debian's chromium (``apt-get install chromium``; .ci/run installs it) and the
``playwright`` Python package (the ``browser-tests`` extra), driving that chromium
binary directly: nothing is downloaded. Skipped, with the reason, where either is missing.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pytest

import netsim

pytest.importorskip("matplotlib", reason="drawing needs the teaching extra (matplotlib)")
Image = pytest.importorskip("PIL.Image", reason="reading the screenshot needs Pillow")
sync_api = pytest.importorskip("playwright.sync_api", reason="the browser test needs the playwright package (pip install 'netsim[browser-tests]')")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    pytest.skip("Chromium was not found (apt-get install chromium); the HTML animation was not opened in a browser")


ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking", "--disable-component-update"]
ARGS += ["--disable-sync", "--no-first-run"]


def test_html_animation_plays_to_the_end_in_headless_chromium(tmp_path):
    executable = _chromium()
    page_file = tmp_path / "allgather.html"
    netsim.animate(netsim.all_gather(np.arange(4), algorithm="ring"), frames=6).save(page_file)
    assert "data:image/png" not in page_file.read_text()  # drawn by the page from the run's events
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1000})
            page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
            page.on("console", lambda message: errors.append(f"console {message.type}: {message.text}") if message.type == "error" else None)
            requests: list[str] = []
            page.on("request", lambda request: requests.append(request.url) if not request.url.startswith(("file:", "data:")) else None)
            page.goto(page_file.as_uri())
            player = page.locator(".nsp")
            assert player.get_attribute("data-time") == "0"
            page.select_option('[data-role="speed"]', "4")
            page.click('[data-role="play"]')
            assert player.get_attribute("data-playing") == "true"
            page.wait_for_function("document.querySelector('.nsp').getAttribute('data-at-end') === 'true'", timeout=20_000)
            page.wait_for_function("document.querySelector('.nsp').getAttribute('data-playing') === 'false'", timeout=5_000)
            assert page.locator('[data-role="caption"]').inner_text().startswith("done: 3 steps")
            page.click('[data-role="prevstep"]')
            assert page.locator('[data-role="caption"]').inner_text().startswith("step 3/3")
            page.click('[data-role="first"]')
            page.click('[data-role="nextstep"]')  # the end of step 1: its blocks have arrived, step 2's leave
            page.click('[data-role="last"]')
            shot = page.screenshot(full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert requests == []
    image = Image.open(io.BytesIO(shot)).convert("RGB")
    pixels = np.asarray(image)
    not_white = np.any(pixels < 235, axis=2).mean()
    assert not_white > 0.03, f"screenshot looks blank: {not_white:.1%} of pixels are not white"
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 20  # the device colours are there

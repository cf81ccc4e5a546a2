"""The web page in a real headless browser (Debian's chromium driven by Playwright), against real uvicorn.

With TRIDENT_SCREENSHOTS=1 the screenshots of the main screens are written to docs/screenshots/
(otherwise to a temporary folder, so a test run leaves the repository unchanged):

    TRIDENT_SCREENSHOTS=1 .venv/bin/python -m pytest tests/test_serve_browser.py
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from pdf_factory import text_pdf
from serve_helpers import ROOT, build_index, uvicorn_thread

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="chromium not installed (scripts/setup.sh --dev installs it with apt)")]
playwright = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install -e .[dev])")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    from trident_local.serve import Settings, create_app

    d = tmp_path_factory.mktemp("browser")
    idx = build_index(d / "idx", d / "pdfs")
    with uvicorn_thread(create_app(Settings(indexes={"reports": str(idx)}))) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """One Playwright and one chromium for the module (a second sync Playwright cannot start beside it)."""
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(server: str, browser):
    pg = browser.new_page(viewport={"width": 1400, "height": 900})
    outside: list[str] = []
    pg.on("request", lambda r: outside.append(r.url) if not r.url.startswith(server) and
          not r.url.startswith("blob:") and not r.url.startswith("data:") else None)
    blocked: list[str] = []  # the page must work under its own Content-Security-Policy
    pg.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    pg.goto(server)
    yield pg
    assert outside == [], f"the page fetched outside resources: {outside}"
    assert blocked == [], f"the page broke its CSP: {blocked}"
    pg.close()


SHOTS = ROOT / "docs" / "screenshots" if os.environ.get("TRIDENT_SCREENSHOTS") == "1" else None


def shot(page, name: str) -> None:
    out = SHOTS or Path(os.environ.get("TMPDIR", "/tmp")) / "trident-screenshots"
    out.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out / f"{name}.png"))
    assert (out / f"{name}.png").stat().st_size > 10_000


def test_ask_with_keyboard_then_open_a_citation(page) -> None:
    page.wait_for_selector("#doclist label")
    assert page.locator("#doclist label").count() == 2
    page.focus("#question")
    page.keyboard.type("Which region led with 2,900 megawatts?")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#answer .cite", timeout=120_000)
    assert "South" in page.inner_text("#answer")
    assert "evidence-first (no model)" in page.inner_text("#produced-by")
    shot(page, "ask")
    page.locator("#answer-text .cite").first.focus()
    page.keyboard.press("Enter")
    img = page.locator("#page-img")  # polled from here: the page's CSP forbids eval'd predicates
    deadline = time.monotonic() + 60
    while not img.evaluate("i => i.complete && i.naturalWidth > 0") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert img.evaluate("i => i.naturalWidth") > 0
    assert "page" in page.inner_text("#page-caption")
    assert page.locator("#answer-text .cite").first.get_attribute("aria-pressed") == "true"
    assert page.locator("#boxes div").count() >= 1
    shot(page, "citation")


def test_verify_an_edited_answer(page) -> None:
    page.select_option("#verify-doc", label="wind.pdf")
    page.fill("#verify-text", "The South region led with 2,900 megawatts [p. 3].")
    page.click("#verify")
    page.wait_for_selector("#verdict-table td", timeout=120_000)
    table = page.inner_text("#verdict-table")
    assert "2,900" in table and any(a in table for a in ("fix-page", "remove", "flag"))
    assert "no-model" in page.inner_text("#verdicts")
    shot(page, "verify")


def test_upload_shows_progress_and_the_new_document(page, tmp_path: Path) -> None:
    pdf = text_pdf(tmp_path / "gearbox.pdf", ["Gearbox manual. The oil is changed every 18 months."])
    page.set_input_files("#files", str(pdf))
    page.click("#upload")
    page.wait_for_selector(".job", timeout=30_000)
    page.wait_for_selector(".job[data-state=done]", timeout=300_000)
    page.wait_for_selector("#doclist label:has-text('gearbox.pdf')", timeout=30_000)
    assert "1/1 files" in page.inner_text(".job[data-state=done]")
    shot(page, "upload")
    page.set_input_files("#files", {"name": "notes.pdf", "mimeType": "application/pdf", "buffer": b"plain text"})
    page.click("#upload")
    page.wait_for_selector("#status.error")
    assert "not a PDF" in page.inner_text("#status")


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory: pytest.TempPathFactory, browser):
    """The demo's report alone in an index, served, in its own browser page."""
    from trident_local.index import Index
    from trident_local.serve import Settings, create_app

    d = tmp_path_factory.mktemp("demo")
    pdf = Path(shutil.copy(ROOT / "samples" / "helios_annual_report_2023.pdf", d / "helios_annual_report_2023.pdf"))
    Index.create(d / "idx").add([pdf], workers=1)
    with uvicorn_thread(create_app(Settings(indexes={"demo": str(d / "idx")}))) as url:
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.goto(url)
        yield pg
        pg.close()


def test_the_demo_answer_outlines_its_cell_and_headers_on_the_page(demo_page) -> None:
    pg = demo_page
    pg.wait_for_selector("#doclist label")
    pg.fill("#question", "What was Helios Grid's revenue in the Coastal region in 2023?")
    pg.keyboard.press("Control+Enter")
    pg.wait_for_selector("#answer .cite", timeout=120_000)
    assert "95.2" in pg.inner_text("#answer")
    assert pg.inner_text("#answer-located") == "where: 95.2 million dollars: Coastal, 2023, Table 1, p. 2"
    pg.locator("#answer-text .cite").first.click()
    img = pg.locator("#page-img")
    deadline = time.monotonic() + 60
    while not img.evaluate("i => i.complete && i.naturalWidth > 0") and time.monotonic() < deadline:
        time.sleep(0.1)
    boxes = pg.locator("#boxes div")
    seen = {boxes.nth(i).get_attribute("title"): boxes.nth(i).get_attribute("class") for i in range(boxes.count())}
    assert seen == {"cell: 95.2": "box", "row-header: Coastal": "box header", "column-header: 2023": "box header"}
    cell = boxes.first.bounding_box()
    page_img = img.bounding_box()
    assert cell["width"] * cell["height"] < page_img["width"] * page_img["height"] / 100  # a cell, not the table
    shot(pg, "cell")
    # a click zooms in: the page is drawn again at 3x the index's DPI, the boxes keep their place on it,
    # and the cell is scrolled into view
    sharp = img.evaluate("i => i.naturalWidth")
    img.click()
    deadline = time.monotonic() + 60
    while img.evaluate("i => i.naturalWidth") <= sharp and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "zoomed" in pg.get_attribute("#page-view", "class")
    assert img.evaluate("i => i.naturalWidth") >= 2 * sharp
    big, big_img = boxes.first.bounding_box(), img.bounding_box()
    assert big_img["width"] > 2 * page_img["width"]
    rel = lambda b, i: ((b["x"] - i["x"]) / i["width"], (b["y"] - i["y"]) / i["height"])  # noqa: E731
    assert rel(big, big_img) == pytest.approx(rel(cell, page_img), abs=0.01)
    view = pg.locator("#page-scroll").bounding_box()
    assert view["x"] <= big["x"] + big["width"] / 2 <= view["x"] + view["width"]  # the cell is on screen
    shot(pg, "cell-zoom")
    img.click()
    assert "zoomed" not in pg.get_attribute("#page-view", "class")

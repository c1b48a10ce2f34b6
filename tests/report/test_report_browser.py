"""The report in a real browser: headless Chromium opens it offline, logs no error,
fetches nothing, lays every figure out, and leaves a full-page screenshot.

Needs the Debian packages ``chromium`` and ``chromium-driver`` and the Python
package ``selenium``; skips with the reason when any is missing. Marked
``browser`` (run with ``-m browser``).
"""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gatebench.report import FIGURES, render_report

pytestmark = pytest.mark.browser

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,1000",
)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not (chromium and chromedriver):
        pytest.skip("needs Debian packages chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path keeps Selenium Manager (which downloads drivers) out of it.
    browser = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    try:
        yield browser
    finally:
        browser.quit()


def _open(driver: Any, report: Path) -> None:
    driver.get(report.resolve().as_uri())
    driver.execute_script("return document.readyState")  # waits for load in WebDriver


def screenshot_full_page(driver: Any, target: Path) -> Path:
    """Capture the whole page, not just the viewport, as PNG (DevTools protocol)."""
    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    size = metrics["cssContentSize"]
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        },
    )
    target.write_bytes(base64.b64decode(shot["data"]))
    return target


def check_in_browser(driver: Any, report: Path) -> dict[str, Any]:
    """Open the report; return what the browser saw (errors, fetches, figure boxes)."""
    driver.get_log("browser")  # drop anything logged before this page
    _open(driver, report)
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    fetched = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    boxes = driver.execute_script(
        "return Array.from(document.querySelectorAll('figure.fig')).map(f => {"
        " const r = f.querySelector('svg').getBoundingClientRect();"
        " return [f.dataset.figure, r.width, r.height]; })"
    )
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    # A table wider than its wrapper scrolls its last columns out of sight.
    cut = driver.execute_script(
        "return Array.from(document.querySelectorAll('.table-wrap'))"
        " .filter(w => w.scrollWidth > w.clientWidth + 1)"
        " .map(w => w.querySelector('table').id || w.querySelector('table').className)"
    )
    return {
        "errors": errors,
        "fetched": fetched,
        "boxes": boxes,
        "overflow": overflow,
        "cut_tables": cut,
    }


def test_report_in_chromium(driver: Any, full_run: Path, full_report: Path) -> None:
    seen = check_in_browser(driver, full_report)
    assert seen["errors"] == []
    assert seen["fetched"] == [], "the report fetched something: it must be self-contained"
    assert len(seen["boxes"]) == len(FIGURES)
    for number, width, height in seen["boxes"]:
        assert width > 200 and height > 100, f"figure {number} laid out at {width}x{height}"
    assert seen["overflow"] <= 1, "the page scrolls sideways"
    assert "competitors-table" not in seen["cut_tables"], seen["cut_tables"]
    shot = screenshot_full_page(driver, full_run / "report-screenshot.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def first_screen(driver: Any, report: Path, target: Path) -> dict[str, Any]:
    """At 1400x900, scrolled to the top: the non-PASS checks, and whether each is in view."""
    # The viewport itself, not the window around it, is 1400x900.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    )
    _open(driver, report)
    driver.execute_script("window.scrollTo(0, 0)")
    seen = driver.execute_script(
        "const h = window.innerHeight;"
        " return Array.from(document.querySelectorAll('#summary-checks li')).map(li => {"
        " const r = li.getBoundingClientRect();"
        " return [li.querySelector('code').textContent, li.dataset.status,"
        " r.top >= 0 && r.bottom <= h]; })"
    )
    headline = driver.execute_script(
        "const r = document.querySelector('#summary').getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight"
    )
    size = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    target.write_bytes(base64.b64decode(driver.get_screenshot_as_base64()))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return {"checks": seen, "summary_in_view": headline, "viewport": size}


def _non_pass(run: Path) -> set[str]:
    import json

    result = json.loads((run / "result.json").read_text())
    return {r["name"] for r in result.get("diagnostics") or [] if r["status"] in ("WARN", "FAIL")}


def test_first_screen_shows_every_failed_or_warned_check(
    driver: Any, full_run: Path, full_report: Path
) -> None:
    expected = _non_pass(full_run)
    assert expected, "the synthetic run must carry WARN/FAIL checks for this test to bite"
    seen = first_screen(driver, full_report, full_run / "first-screen.png")
    assert seen["viewport"] == [1400, 900]
    assert seen["summary_in_view"]
    assert {name for name, _, _ in seen["checks"]} == expected
    hidden = [name for name, _, visible in seen["checks"] if not visible]
    assert hidden == [], f"below the first 1400x900 screen: {hidden}"


def test_real_run_in_chromium(driver: Any, real_run: Path) -> None:
    """$GATEBENCH_REPORT_RUN (e.g. tfidf-lr on the default trace): same checks, screenshot."""
    report = render_report(real_run)
    seen = check_in_browser(driver, report)
    assert seen["errors"] == [] and seen["fetched"] == []
    assert seen["overflow"] <= 1
    assert "competitors-table" not in seen["cut_tables"], seen["cut_tables"]
    screenshot_full_page(driver, real_run / "report-screenshot.png")
    shown = first_screen(driver, report, real_run / "first-screen.png")
    assert {name for name, _, _ in shown["checks"]} == _non_pass(real_run)
    assert all(visible for _, _, visible in shown["checks"]), shown["checks"]

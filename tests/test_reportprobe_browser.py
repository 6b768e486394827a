"""A real run of twenty long-named arms, one of whose episodes fail, read in headless Chromium.

``zorkmcp eval`` (real Zork, the loopback model) plays twenty arms whose names run to 64 characters,
two seeds each; the arm ``broken``'s model answers every request with HTTP 400 and a long error whose
body has no space in it, as providers' JSON does. Chromium opens the run's ``report.html`` and the
failed episode's page (``zorkmcp report RUN --episode broken/seed-12``) as tests/test_report_browser.py
opens its pages (its fixtures and helpers), and the tests check what a reader sees at 1280×800:
every table fits its box (none scrolls sideways), a comparison's row is a few lines high, the page
is a few screens long, and the failed episode's page is no wider than the screen. Before, the
names on one line made the comparisons' readings a column of three words (59,000 pixels of page),
and the error widened the episode's page to 3,146 pixels.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import Reply, agent_reply
from play_support import zork1_path
from test_bridge import llm_in_thread
from test_report_browser import KEYS, browser, fits_the_screen, layout, screenshot, screenshots, show

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path

    from llm_server import RecordedRequest

__all__ = ["browser", "screenshots"]  # the fixtures, from tests/test_report_browser.py

ERROR_BODY = "y" * 600
"""What the broken model's 400 says: one word of 600 characters (a base64 blob, a JSON dump)."""

ARMS = [
    (f"arm-{i:02d}-very_long_configuration_name_" + "x" * 40)[:64] if i % 3 == 0 else f"arm{i}"
    for i in range(19)
] + ["broken"]


def model(request: RecordedRequest) -> Reply:
    if request.method != "POST":  # the run's probe of the endpoint (GET /models)
        return Reply(status=404)
    if request.json.get("model") == "broken":
        body = json.dumps({"error": {"message": f"bad request {ERROR_BODY}"}}).encode()
        return Reply(status=400, body=body, headers=(("content-type", "application/json"),))
    return agent_reply("north")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``zorkmcp eval`` of :data:`ARMS` (2 seeds, 2 turns), then the broken arm's episode's page."""
    folder = tmp_path_factory.mktemp("probe")
    arms = "".join(
        f'[[arms]]\nname = "{name}"\nmodel = "{"broken" if name == "broken" else "m"}"\nmcp = false\n'
        f"temperature = {i / 20:.2f}\n\n"
        for i, name in enumerate(ARMS)
    )
    (folder / "eval.toml").write_text(f"[eval]\nepisodes = 2\nmax_turns = 2\nconcurrency = 8\n\n{arms}")
    with llm_in_thread(default=model) as llm, pytest.MonkeyPatch.context() as patch:
        for name in KEYS:
            patch.delenv(name, raising=False)
        patch.chdir(folder)
        common = ["--game", str(zork1_path()), "--base-url", llm.base_url, "--quiet"]
        assert main(["eval", "eval.toml", *common, "--out", "run"]) == 1  # the broken arm's episodes failed
        assert main(["report", "run", "--episode", "broken/seed-12"]) == 0
    return folder / "run"


def test_twenty_long_named_arms_fit_the_page(browser: Any, run: Path, screenshots: Path) -> None:
    from selenium.webdriver.common.by import By

    seen = show(browser, run / "report.html", 1280)
    assert seen["console"] == []
    fits_the_screen(browser, 1280)
    tables = layout(browser)["tables"]
    assert len(tables) == 5  # setup, summary, the first arm's comparisons, the others', failed episodes
    assert [t["table"] <= t["box"] for t in tables] == [True] * 5  # none scrolls sideways
    first = browser.find_elements(By.TAG_NAME, "table")[2]
    rows = first.find_elements(By.CSS_SELECTOR, "tr")[1:]
    assert len(rows) == 19
    assert max(row.rect["height"] for row in rows) < 120  # was about 300: three words a line
    assert browser.execute_script("return document.documentElement.scrollHeight") < 9000
    [others] = browser.find_elements(By.TAG_NAME, "details")
    assert others.get_attribute("open") is None  # 171 pairs, folded
    assert others.find_element(By.TAG_NAME, "summary").text == (
        "The other 171 comparisons (every pair of the other arms)"
    )
    failed = browser.find_elements(By.TAG_NAME, "table")[-1].find_elements(By.CSS_SELECTOR, "tr")[1:]
    assert [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")][:3] for row in failed] == [
        ["broken", "12", "0"],
        ["broken", "13", "0"],
    ]
    screenshot(browser, screenshots / "probe-run-1280.png", full_page=True)
    show(browser, run / "report.html", 400)
    fits_the_screen(browser, 400)


def test_a_failed_episodes_page_with_a_long_error_fits_the_screen(
    browser: Any, run: Path, screenshots: Path
) -> None:
    from selenium.webdriver.common.by import By

    page = run / "episodes" / "broken" / "seed-12.html"
    show(browser, page, 1280)
    fits_the_screen(browser, 1280)  # the error in its card made the page 3,146 pixels wide
    card = browser.find_element(By.CSS_SELECTOR, ".card")
    assert card.text.splitlines() == ["failed: LLMHTTPError", "result"]
    error = browser.find_element(By.CSS_SELECTOR, "p.err")
    assert error.text.startswith("LLMHTTPError: POST http://127.0.0.1:")
    assert ERROR_BODY[:100] in error.text.replace("\n", "")
    screenshot(browser, screenshots / "probe-episode-1280.png", full_page=False)

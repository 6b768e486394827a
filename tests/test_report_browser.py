"""The report pages in a real browser: headless Chromium opens them as a person would.

``zorkmcp eval`` (real Zork, the embedded think server, the loopback model) writes a run's
``report.html``; ``zorkmcp play`` then ``zorkmcp report`` write one episode's page from its event log.
Chromium opens each page from its ``file://`` URL, and the tests check what a person sees there: the
title, the arms' rows and the transcript shown, every figure decoded, no request but the page itself
and its ``data:`` figures, nothing on the console; and at a laptop's size (1280×800) and a phone's
width (400 px), that the page keeps the screen's width (a wide table scrolls in its own box), the
figures fit it, and no word of the game text is broken across lines. Each view is saved as a PNG
(``pytest --basetemp=DIR`` keeps them: ``DIR/screenshots0/``).

The browser is Debian's ``chromium``, driven by Selenium through Debian's ``chromedriver`` (package
``chromium-driver``). Selenium rather than Playwright: Playwright's wheel is 53 MB (168 MB unpacked: it
bundles Node.js) and supports only the browser builds it downloads itself, which this network does
not allow; Selenium's is 12 MB, its dependencies are small (trio, which zorkmcp already needs, and a
few pure-Python packages), it is the W3C WebDriver project's own client, and the driver comes from
the same Debian source package as the browser, so the two always match. Chromium's own logs
(``goog:loggingPrefs``) give the console messages and every network request, and two DevTools
commands set the screen size and take the full-page screenshot. With no ``chromium``,
``chromedriver`` or Selenium the tests are skipped, saying which is missing (``.ci/run`` installs
them).
"""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import Reply, agent_reply, tool_call, tool_call_reply
from play_support import INPROCESS_THINKING, descendants, is_running, write_project, zork1_path
from test_bridge import llm_in_thread

from zorkmcp.cli import main

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from llm_server import RecordedRequest

KEYS = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GAME", "ZORKMCP_GAME_SEED")

ROUTE = ["north", "east", "open window", "west"]
"""West of House to the Kitchen (10 points on turn 4): the model with tools plays it."""

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,800",
]
"""Headless, and nothing that reaches for the network on its own."""

WAIT_SECONDS = 30
"""The longest a page may take to load, or its figures to decode."""


# --- the pages, made as a user makes them ------------------------------------------------------


def model(request: RecordedRequest) -> Reply:
    """The loopback model: with the think tool offered, think once, then walk :data:`ROUTE`;
    without tools, go north every turn."""
    if request.method != "POST":  # the run's probe of the endpoint (GET /models)
        return Reply(status=404)
    tools = [t["function"]["name"] for t in request.json.get("tools", [])]
    turn = int(re.findall(r"Turn (\d+)\. Location", json.dumps(request.messages))[-1])
    if "thinking__think" not in tools:
        return agent_reply("north", thinking=f"Turn {turn}: <b>north</b> again.")
    if request.messages[-1].get("role") != "tool":
        thought = {"thought": f"Turn {turn}: the house", "thoughtNumber": 1, "totalThoughts": 1}
        return tool_call_reply(tool_call("thinking__think", {**thought, "nextThoughtNeeded": False}))
    return agent_reply(ROUTE[turn - 1], thinking=f"Turn {turn}: <b>{ROUTE[turn - 1]}</b> next.")


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``run``: ``zorkmcp eval --compare-mcp`` (2 seeds, 4 turns) in a folder of its own, its
    ``report.html``; ``episode``: ``zorkmcp play`` (MCP on, 4 turns) then ``zorkmcp report`` of its log."""
    folder = tmp_path_factory.mktemp("pages")
    play = folder / "play"
    write_project(play, mcp_config=INPROCESS_THINKING)
    with llm_in_thread(default=model) as llm, pytest.MonkeyPatch.context() as patch:
        for name in KEYS:
            patch.delenv(name, raising=False)
        patch.chdir(folder)
        online = ("--base-url", llm.base_url, "--model", "m", "--quiet")
        common = ("--game", str(zork1_path()), "--turns", "4", *online)
        assert main(["eval", *common, "--compare-mcp", "--episodes", "2", "--out", "run"]) == 0
        patch.chdir(play)
        assert main(["play", *common]) == 0
        assert main(["report", "logs/zorkmcp_events.jsonl", "-o", "logs/episode.html"]) == 0
    return {"run": folder / "run" / "report.html", "episode": play / "logs" / "episode.html"}


# --- the browser ---------------------------------------------------------------------------------


def _wait_gone(processes: dict[int, tuple[int | None, str]]) -> list[str]:
    """Wait (at most :data:`WAIT_SECONDS` each) until these processes have exited; those that did not."""
    left = []
    for pid, (start, cmdline) in processes.items():
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            if is_running(pid, start) and not select.select([pidfd], [], [], WAIT_SECONDS)[0]:
                left.append(cmdline)
        finally:
            os.close(pidfd)
    return left


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium under chromedriver, a new empty profile; at the end, quit and every one of
    its processes gone."""
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None:
        pytest.skip("no chromium on PATH (apt-get install chromium chromium-driver)")
    if chromedriver is None:
        pytest.skip("no chromedriver on PATH (apt-get install chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="no selenium (pip install -e '.[dev]')")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium  # with the driver's path given too, Selenium Manager is not run
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    try:
        driver.set_page_load_timeout(WAIT_SECONDS)
        driver.set_script_timeout(WAIT_SECONDS)
        driver.get("about:blank")
        yield driver
    finally:
        processes = {driver.service.process.pid: (None, "chromedriver")}
        processes.update(descendants(driver.service.process.pid))
        driver.quit()
    assert _wait_gone(processes) == []


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


def show(driver: Any, page: Path, width: int) -> dict[str, Any]:
    """Open ``page`` on a ``width``×800 screen, wait for its figures to decode; what the browser did.

    Returns: ``requests``, the URLs the page asked for (it first); ``failed``, the requests that
    failed; ``console``, the console's messages.
    """
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": False},
    )
    driver.get_log("performance")  # what came before this page: not its own
    driver.get_log("browser")
    driver.get(page.as_uri())  # returns once the load event fired
    decoded = driver.execute_async_script(
        "const done = arguments[0];"
        "Promise.all([...document.images].map(i => i.decode())).then(() => done(null), e => done(String(e)))"
    )
    assert decoded is None  # every figure decoded, or the reason one did not
    sent, failed = [], []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            sent.append(message["params"]["request"]["url"])
        elif message["method"] == "Network.loadingFailed":
            failed.append(message["params"])
    return {"requests": sent, "failed": failed, "console": driver.get_log("browser")}


def screenshot(driver: Any, path: Path, *, full_page: bool) -> tuple[int, int]:
    """Save the screen (or the whole page) as ``path``; its (width, height) in pixels."""
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": full_page}
    )
    png = base64.b64decode(shot["data"])
    path.write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def images(driver: Any) -> list[dict[str, Any]]:
    return driver.execute_script(
        "return [...document.images].map(i => ({complete: i.complete, natural: i.naturalWidth,"
        " left: i.getBoundingClientRect().left, width: i.getBoundingClientRect().width,"
        " src: i.src.slice(0, 22)}))"
    )


def layout(driver: Any) -> dict[str, Any]:
    """How the page fits the screen: its width and the screen's; each table's width and its box's."""
    return driver.execute_script(
        "const root = document.documentElement;"
        "return {page: root.scrollWidth, screen: root.clientWidth,"
        " tables: [...document.querySelectorAll('table')].map(t => ({table: t.getBoundingClientRect().width,"
        "  right: t.parentElement.getBoundingClientRect().right, box: t.parentElement.clientWidth,"
        "  scrolls: getComputedStyle(t.parentElement).overflowX}))}"
    )


def shown_rows(table: Any) -> list[list[str]]:
    """The rows of ``table`` a person sees, each as its cells' text; a hidden row fails."""
    from selenium.webdriver.common.by import By

    rows = table.find_elements(By.CSS_SELECTOR, "tr")[1:]
    assert all(row.is_displayed() for row in rows)
    return [[cell.text for cell in row.find_elements(By.CSS_SELECTOR, "td")] for row in rows]


def fits_the_screen(driver: Any, width: int) -> None:
    """The page is no wider than the screen; a table wider than its box scrolls in it, not clipped."""
    seen = layout(driver)
    assert seen["page"] == seen["screen"] <= width  # nothing makes the page scroll sideways
    for table in seen["tables"]:
        assert table["right"] <= seen["screen"]
        assert table["table"] <= table["box"] or table["scrolls"] == "auto", table
    for image in images(driver):
        assert image["left"] >= 0
        assert image["left"] + image["width"] <= seen["screen"]
        assert image["width"] <= image["natural"]  # never drawn wider than its pixels (soft)


# --- the eval run's page -------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1280, 400])
def test_the_run_page_shows_the_arms_and_its_figures(
    browser: Any, pages: dict[str, Path], screenshots: Path, width: int
) -> None:
    from selenium.webdriver.common.by import By

    seen = show(browser, pages["run"], width)
    url = pages["run"].as_uri()
    assert browser.title == "zorkmcp eval run"
    assert [u for u in seen["requests"] if not u.startswith("data:")] == [url]  # nothing fetched
    assert sum(u.startswith("data:image/png;base64,") for u in seen["requests"]) == 3
    assert seen["failed"] == []
    assert seen["console"] == []

    heading = browser.find_element(By.TAG_NAME, "h1")
    assert (heading.text, heading.is_displayed()) == ("zorkmcp eval: run", True)
    setup, arms, comparisons, tools = browser.find_elements(By.TAG_NAME, "table")
    assert shown_rows(setup) == [["mcp", "m", "thinking"], ["no-mcp", "m", "none (no MCP)"]]
    assert [row[:5] for row in shown_rows(arms)] == [
        ["mcp", "2", "0", "10.00 ± 0.00", "10–10"],
        ["no-mcp", "2", "0", "0.00 ± 0.00", "0–0"],
    ]
    assert [row[:2] for row in shown_rows(comparisons)] == [["mcp − no-mcp", "10.00"]]
    assert [row[:3] for row in shown_rows(tools)] == [["mcp", "thinking.think", "8"]]

    shown = images(browser)
    assert [(i["complete"], i["src"]) for i in shown] == [(True, "data:image/png;base64,")] * 3
    assert all(i["natural"] > 0 for i in shown)  # decoded
    fits_the_screen(browser, width)
    if width == 400:  # the two small figures one above the other, each the column's whole width
        assert len({round(i["width"]) for i in shown}) == 1
    size = screenshot(browser, screenshots / f"run-{width}.png", full_page=width == 400)
    assert size[0] <= width


# --- one episode's page ----------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1280, 400])
def test_the_episode_page_shows_its_transcript(
    browser: Any, pages: dict[str, Path], screenshots: Path, width: int
) -> None:
    from selenium.webdriver.common.by import By

    log = pages["episode"].parent / "zorkmcp_events.jsonl"
    episode = json.loads(log.read_text(encoding="utf-8").splitlines()[0])["episode_id"]
    seen = show(browser, pages["episode"], width)
    assert browser.title == f"zorkmcp episode {episode}"
    assert [u for u in seen["requests"] if not u.startswith("data:")] == [pages["episode"].as_uri()]
    assert sum(u.startswith("data:image/png;base64,") for u in seen["requests"]) == 1
    assert seen["failed"] == []
    assert seen["console"] == []

    assert browser.find_element(By.TAG_NAME, "h1").text == f"zork1: episode {episode}"
    cards = [card.text.splitlines() for card in browser.find_elements(By.CSS_SELECTOR, ".card")]
    assert cards[:3] == [["stopped: turn limit", "result"], ["10 / 350", "score"], ["4 / 4", "turns / moves"]]
    assert [h.text for h in browser.find_elements(By.TAG_NAME, "h2")] == ["Transcript"]
    rows = shown_rows(browser.find_element(By.TAG_NAME, "table"))
    assert [row[0] for row in rows] == ["1", "2", "3", "4"]
    assert [row[1].splitlines() for row in rows] == [
        ["north", "North of House"],
        ["east", "Behind House"],
        ["open window", "Behind House"],
        ["west", "Kitchen"],
    ]
    assert [row[2] for row in rows] == ["0", "0", "0", "10"]
    assert rows[3][3].startswith("Kitchen\nYou are in the kitchen of the white house.")
    assert rows[3][4] == "Turn 4: <b>west</b> next."  # the model's text shown as text
    assert all(row[5].startswith('thinking.think({"thought": "Turn ') for row in rows)

    [image] = images(browser)
    assert (image["complete"], image["natural"] > 0) == (True, True)
    fits_the_screen(browser, width)
    # no word of the game text broken across lines: each column is at least as wide as its longest word
    widths = browser.execute_script(
        "const pen = document.createElement('canvas').getContext('2d');"
        "return [...document.querySelectorAll('td pre')].map(pre => {"
        " pen.font = getComputedStyle(pre).font;"
        " const words = pre.textContent.split(/\\s+/).map(w => pen.measureText(w).width);"
        " return [pre.getBoundingClientRect().width, Math.floor(Math.max(...words))]})"
    )
    assert len(widths) == 4
    assert all(column >= word for column, word in widths), widths
    size = screenshot(browser, screenshots / f"episode-{width}.png", full_page=width == 400)
    assert size[0] <= width

"""HTML reports: one episode's event log and an eval run folder, and ``zorkmcp report``'s exits."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest
from report_data import episode_events, fail_episode, write_events, write_run

from zorkmcp._cli_report import add_report_parser, run_report
from zorkmcp.eval import ReportInputError, render_episode_report, render_eval_report
from zorkmcp.eval._report import find_episode_events

if TYPE_CHECKING:
    from pathlib import Path


def assert_self_contained(html: str) -> None:
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"(src|href)=\"(?!data:)", html), "every asset must be inline"
    assert "http://" not in html
    assert "https://" not in html


def test_episode_page_shows_header_figure_and_transcript(tmp_path: Path) -> None:
    log = write_events(tmp_path / "events.jsonl", episode_events(), bad_lines=2)
    out = render_episode_report(log, tmp_path / "page.html")
    html = out.read_text(encoding="utf-8")
    assert_self_contained(html)
    assert "zork1: episode ep-7f3a" in html
    assert "stopped: max_turns" in html
    assert "45 / 350" in html
    assert "qwen3-30b-a3b" in html
    assert html.count("data:image/png;base64,") == 1
    assert html.count("<tr>") == 31  # header + 30 turns
    assert "open mailbox" in html
    assert "Opening the small mailbox reveals a leaflet." in html
    assert "thinking.think" in html
    assert "thinking.thinking" not in html  # canonical names are shown as they are
    assert "[timeout" in html
    assert "new objective: find a light source" in html
    assert "2 line(s) of the log were not JSON objects and were skipped." in html


def test_untrusted_text_is_escaped(tmp_path: Path) -> None:
    events = episode_events()
    events[1]["observation"] = "<img src=x onerror=alert(1)>"
    events[1]["tools"] = [{"name": "t<b>", "arguments": "<script>", "result": "&", "outcome": "ok"}]
    html = render_episode_report(write_events(tmp_path / "e.jsonl", events), tmp_path / "p.html").read_text()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html  # in a reasoning string
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "t&lt;b&gt;" in html


def test_old_log_without_optional_fields(tmp_path: Path) -> None:
    lines = [
        {"event_type": "episode_start", "episode_id": "old", "turn": 0, "timestamp": "t"},
        {"event_type": "llm_retry", "episode_id": "old", "turn": 1, "timestamp": "t", "attempt": 2},
        {"event_type": "turn_complete", "episode_id": "old", "turn": 1, "action": "look", "score": 0},
        {"event_type": "turn_complete", "episode_id": "old", "turn": 2, "action": "north", "tool_calls": 2},
    ]
    html = render_episode_report(write_events(tmp_path / "e.jsonl", lines), tmp_path / "p.html").read_text()
    assert "unfinished (no episode_complete)" in html
    assert "2 call(s)" in html
    assert "north" in html


def two_episode_log(tmp_path: Path) -> Path:
    return write_events(tmp_path / "two.jsonl", episode_events("run-a", 1) + episode_events("run-b", 2))


def test_several_episodes_need_an_id(tmp_path: Path) -> None:
    log = two_episode_log(tmp_path)
    with pytest.raises(ReportInputError) as raised:
        render_episode_report(log, tmp_path / "p.html")
    assert str(raised.value) == (
        f"{log}: holds 2 episodes; pick one with --episode ID (run-a (seed 1, started "
        "2026-11-23T08:00:00Z, 30 turns); run-b (seed 2, started 2026-11-23T08:00:00Z, 30 turns)); "
        "the last is the most recent"
    )
    with pytest.raises(ReportInputError, match=r"no episode 'run-c'; the log holds: run-a, run-b"):
        render_episode_report(log, tmp_path / "p.html", "run-c")
    html = render_episode_report(log, tmp_path / "p.html", "run-b").read_text()
    assert "episode run-b" in html
    assert "seed 2" in html


def test_missing_log_and_empty_log(tmp_path: Path) -> None:
    with pytest.raises(ReportInputError, match=r"nope\.jsonl: no such file"):
        render_episode_report(tmp_path / "nope.jsonl", tmp_path / "p.html")
    empty = write_events(tmp_path / "e.jsonl", [{"event_type": "llm_retry", "episode_id": "x"}], bad_lines=1)
    with pytest.raises(ReportInputError, match=r"e\.jsonl: no episode records"):
        render_episode_report(empty, tmp_path / "p.html")


def test_eval_page(tmp_path: Path) -> None:
    write_run(tmp_path)
    (tmp_path / "episodes" / "mcp" / "seed-9.json").write_text("{broken", encoding="utf-8")
    html = render_eval_report(tmp_path).read_text(encoding="utf-8")
    assert_self_contained(html)
    assert html.count("data:image/png;base64,") == 3
    assert "10 episodes" in html
    assert "1 episode file(s) could not be read" in html
    assert "mcp − no-mcp" in html
    assert "95% CI (Welch)" in html
    assert "excluded from score statistics" in html
    assert html.index("<td>mcp</td>") < html.index("<td>no-mcp</td>")
    # what each arm played with: the question "did tools help?" needs to say which tools
    assert (
        "<tr><th>arm</th><th>model</th><th>MCP servers</th></tr>"
        "<tr><td>mcp</td><td>qwen3-30b-a3b</td><td>thinking</td></tr>"
        "<tr><td>no-mcp</td><td>qwen3-30b-a3b</td><td>none (no MCP)</td></tr>"
    ) in html


def test_eval_page_gives_both_intervals_for_a_comparison(tmp_path: Path) -> None:
    write_run(tmp_path, seeds=4, failed=False)
    scores = {"mcp": [40, 31, 59, 48], "no-mcp": [38, 30, 56, 46]}  # the seed moves both arms
    for arm, arm_scores in scores.items():
        for seed, score in enumerate(arm_scores, start=1):
            path = tmp_path / "episodes" / arm / f"seed-{seed}.json"
            record = json.loads(path.read_text(encoding="utf-8"))
            record.update(score=score, scores=[score])
            path.write_text(json.dumps(record), encoding="utf-8")
    html = render_eval_report(tmp_path).read_text(encoding="utf-8")
    # Welch: se 8.1445, df 5.97, t 2.4497; paired: differences 2, 1, 3, 2, se 0.408248, t(0.975, 3) 3.182446
    assert (
        "<tr><td class=nw>mcp − no-mcp</td><td class=n>2.00</td><td class=n>-17.95 … 21.95</td>"
        "<td class=n>4</td><td class=n>2.00</td><td class=n>0.70 … 3.30</td>"
        "<td>mcp scores higher (paired 95% interval above 0)</td></tr>"
    ) in html


def test_eval_page_shows_each_tool_the_model_called(tmp_path: Path) -> None:
    records = write_run(tmp_path, seeds=2, failed=False)
    assert "Tool use" not in render_eval_report(tmp_path).read_text()  # records of older versions
    calls = {"calls": 3, "errors": 1, "timeouts": 0, "skipped": 0, "seconds": 0.006}
    for record in records:
        record["tools"] = {"thinking.think": calls} if record["arm"] == "mcp" else {}
        path = tmp_path / "episodes" / record["arm"] / f"seed-{record['seed']}.json"
        path.write_text(json.dumps(record))
    html = render_eval_report(tmp_path).read_text()
    assert [r["turns"] for r in records if r["arm"] == "mcp"] == [34, 40]  # 6 calls in 74 turns
    assert (
        "<tr><td>mcp</td><td>thinking.think</td><td class=n>6</td><td class=n>0.08</td>"
        "<td class=n>2 of 2</td><td class=n>2 / 0 / 0</td><td class=n>2.0</td></tr>"
    ) in html
    assert "<td>no-mcp</td><td>" not in html.split("<h2>Tool use</h2>")[1].split("</table>")[0]


def test_eval_page_follows_the_summary_arm_order(tmp_path: Path) -> None:
    write_run(tmp_path, seeds=2, failed=False)
    (tmp_path / "summary.json").write_text(json.dumps({"arms": {"no-mcp": {}, "mcp": {}}}))
    html = render_eval_report(tmp_path, tmp_path / "other.html").read_text(encoding="utf-8")
    assert html.index("<td>no-mcp</td>") < html.index("<td>mcp</td>")
    assert "no-mcp − mcp" in html
    assert "<h2>Failed episodes</h2>" not in html
    assert not (tmp_path / "report.html").exists()


REFUSED = (
    "LLMTransportError: POST http://127.0.0.1:8000/v1/chat/completions failed: "
    "ConnectError: [Errno 111] Connection refused"
)


@pytest.mark.filterwarnings("error")
def test_eval_page_when_every_episode_failed(tmp_path: Path) -> None:
    write_run(tmp_path, seeds=2, failed=False)
    for arm in ("mcp", "no-mcp"):
        for seed in (1, 2):
            fail_episode(tmp_path, arm, seed, REFUSED)
    html = render_eval_report(tmp_path).read_text(encoding="utf-8")
    assert "data:image/png;base64," not in html
    assert (
        "<h2>Figures</h2><p class=note>Nothing to draw: no episode finished without an error "
        "(see Failed episodes below).</p><h2>Failed episodes</h2>"
    ) in html
    rows = [
        f"<tr><td>{arm}</td><td class=n>{seed}</td><td class=n>0</td><td>{REFUSED}</td></tr>"
        for arm, seed in (("mcp", 1), ("mcp", 2), ("no-mcp", 1), ("no-mcp", 2))
    ]
    assert [html.index(row) for row in rows] == sorted(html.index(row) for row in rows)
    assert "more failed episode(s)" not in html


@pytest.mark.filterwarnings("error")
def test_eval_page_lists_failed_episodes_escaped_and_cut(tmp_path: Path) -> None:
    write_run(tmp_path, seeds=3, failed=False)
    (tmp_path / "summary.json").write_text(json.dumps({"arms": {"no-mcp": {}, "mcp": {}}}))
    gateway = "<html>\n  <body>upstream connect error or disconnect/reset before headers</body>\n</html>\n"
    fail_episode(tmp_path, "mcp", 2, "GameError: the story file\n\tstopped <script>alert(1)</script>", 12)
    fail_episode(tmp_path, "no-mcp", 1, REFUSED)
    fail_episode(
        tmp_path,
        "no-mcp",
        2,
        "LLMHTTPError: POST /v1/chat/completions: HTTP 502 Bad Gateway; body: " + gateway * 12,
        3,
    )
    fail_episode(tmp_path, "no-mcp", 3, "MCPServerStartupError: Failed to start MCP server 'thinking'", 7)
    html = render_eval_report(tmp_path).read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == 3  # the arm with no finished episode has no curve
    assert "Nothing to draw" not in html
    assert "<script>" not in html
    rows = [
        "<tr><td>no-mcp</td><td class=n>1</td><td class=n>0</td><td>" + REFUSED + "</td></tr>",
        # cut at a word past 1000 characters: ten pages whole, the eleventh up to its last whole word
        "<tr><td>no-mcp</td><td class=n>2</td><td class=n>3</td><td>LLMHTTPError: POST /v1/chat/completions: "
        "HTTP 502 Bad Gateway; body: "
        + "&lt;html&gt; &lt;body&gt;upstream connect error or disconnect/reset before headers&lt;/body&gt; "
        "&lt;/html&gt; "
        * 10
        + "&lt;html&gt; &lt;body&gt;upstream connect error or disconnect/reset before…</td></tr>",
        "<tr><td>no-mcp</td><td class=n>3</td><td class=n>7</td><td>MCPServerStartupError: Failed to start "
        "MCP server &#x27;thinking&#x27;</td></tr>",
        "<tr><td>mcp</td><td class=n>2</td><td class=n>12</td><td>GameError: the story file stopped "
        "&lt;script&gt;alert(1)&lt;/script&gt;</td></tr>",
    ]
    assert html.index("<h2>Figures</h2>") < html.index("<h2>Failed episodes</h2>")
    assert [html.index(row) for row in rows] == sorted(html.index(row) for row in rows)


@pytest.mark.filterwarnings("error")
def test_eval_page_lists_at_most_50_failed_episodes(tmp_path: Path) -> None:
    write_run(tmp_path, seeds=30, failed=False)
    for arm in ("mcp", "no-mcp"):
        for seed in range(1, 31):
            fail_episode(tmp_path, arm, seed, REFUSED)
    html = render_eval_report(tmp_path).read_text(encoding="utf-8")
    assert html.count(REFUSED) == 50
    assert "<tr><td>mcp</td><td class=n>30</td>" in html
    assert "<tr><td>no-mcp</td><td class=n>20</td>" in html
    assert "<tr><td>no-mcp</td><td class=n>21</td>" not in html
    assert (
        "<p class=note>10 more failed episode(s) are not listed; every record is in "
        "episodes/&lt;arm&gt;/seed-&lt;N&gt;.json.</p>"
    ) in html


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(ReportInputError, match="not an eval run folder"):
        render_eval_report(tmp_path)
    (tmp_path / "episodes" / "mcp").mkdir(parents=True)
    with pytest.raises(ReportInputError) as raised:
        render_eval_report(tmp_path)
    assert str(raised.value) == (
        f"{tmp_path / 'episodes'}: no readable episodes/<arm>/seed-<N>.json records; no episode of this "
        f"run has finished yet: wait for one, or play them with the same zorkmcp eval command and "
        f"--resume --out {tmp_path}"
    )


def report(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="zorkmcp")
    add_report_parser(parser.add_subparsers(dest="command", required=True))
    return run_report(parser.parse_args(["report", *argv]))


def test_cli_events_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write_events(tmp_path / "events.jsonl", episode_events())
    assert report(str(log)) == 0
    assert (tmp_path / "report.html").is_file()
    assert report(str(log), "-o", str(tmp_path / "x.html")) == 0
    assert "episode ep-7f3a" in (tmp_path / "x.html").read_text(encoding="utf-8")
    assert "wrote" in capsys.readouterr().out


def test_cli_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = two_episode_log(tmp_path)
    assert report(str(log)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "pick one with --episode ID (run-a (seed 1, " in err
    assert report(str(tmp_path / "missing.jsonl")) == 2
    assert "missing.jsonl: no such file" in capsys.readouterr().err
    assert report(str(log), "--episode", "run-a") == 0


def test_cli_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path, seeds=2, failed=False)
    assert report(str(tmp_path)) == 0
    assert "mcp − no-mcp" in (tmp_path / "report.html").read_text(encoding="utf-8")
    out = tmp_path / "ep.html"
    assert report(str(tmp_path), "--episode", "mcp/seed-2", "-o", str(out)) == 0
    assert "episode mcp-s2" in out.read_text(encoding="utf-8")
    assert report(str(tmp_path), "--episode", "no-mcp-s1", "-o", str(out)) == 0
    assert "episode no-mcp-s1" in out.read_text(encoding="utf-8")
    run_page = (tmp_path / "report.html").read_bytes()
    # with no -o, an episode's page goes beside its log, not over the run's page
    assert report(str(tmp_path), "--episode", "mcp/seed-2") == 0
    assert report(str(tmp_path / "episodes" / "no-mcp" / "seed-1.events.jsonl")) == 0
    assert (tmp_path / "report.html").read_bytes() == run_page
    pages = tmp_path / "episodes"
    assert "episode mcp-s2" in (pages / "mcp" / "seed-2.html").read_text(encoding="utf-8")
    assert "episode no-mcp-s1" in (pages / "no-mcp" / "seed-1.html").read_text(encoding="utf-8")
    assert capsys.readouterr().out.splitlines()[-2:] == [
        f"zorkmcp report: wrote {tmp_path / 'episodes' / 'mcp' / 'seed-2.html'}",
        f"zorkmcp report: wrote {tmp_path / 'episodes' / 'no-mcp' / 'seed-1.html'}",
    ]
    assert report(str(tmp_path), "--episode", "mcp/seed-7") == 2
    assert "no episode 'mcp/seed-7'" in capsys.readouterr().err


def test_an_episode_whose_event_log_is_gone_is_said_so_not_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(tmp_path, seeds=2, failed=False)
    events = tmp_path / "episodes" / "no-mcp" / "seed-2.events.jsonl"
    events.unlink()
    record = tmp_path / "episodes" / "no-mcp" / "seed-2.json"
    line = (
        f"{events}: missing: episode 'no-mcp/seed-2' has its record (seed-2.json) but no event log to draw; "
        f"to play it again, remove {record} and run the run's zorkmcp eval command with --resume --out "
        f"{tmp_path}"
    )
    with pytest.raises(ReportInputError) as caught:
        find_episode_events(tmp_path, "no-mcp/seed-2")
    assert str(caught.value) == line
    with pytest.raises(ReportInputError) as caught:  # its episode_id, as zorkmcp eval names it
        find_episode_events(tmp_path, "no-mcp-seed-2")
    assert str(caught.value) == line.replace("'no-mcp/seed-2'", "'no-mcp-seed-2'")
    assert report(str(tmp_path), "--episode", "no-mcp/seed-2") == 2
    assert capsys.readouterr().err == f"zorkmcp report: {line}\n"


def test_cli_page_to_a_descriptor_and_its_line_beside_it(tmp_path: Path) -> None:
    # --output /dev/fd/1 (or /dev/stdout): the page is the whole of stdout, the "wrote" line goes to stderr
    write_run(tmp_path, seeds=2, failed=False)
    done = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "report", str(tmp_path), "-o", "/dev/fd/1"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "zorkmcp report: wrote /dev/fd/1\n")
    assert done.stdout.startswith("<!DOCTYPE html>")
    assert done.stdout.endswith("</html>\n")
    assert "mcp − no-mcp" in done.stdout
    assert not (tmp_path / "report.html").exists()


def test_cli_a_page_that_cannot_be_written_says_why_and_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import stat

    write_run(tmp_path / "run", seeds=2, failed=False)
    full = tmp_path / "full"
    try:
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # a disk that is always full
    except PermissionError:
        pytest.skip("making a device needs root")
    assert report(str(tmp_path / "run"), "-o", str(full)) == 2
    assert capsys.readouterr().err == (
        f"zorkmcp report: {full}: cannot be written (No space left on device); make room on its disk, "
        "or pass --output FILE.html\n"
    )


def test_import_does_not_load_matplotlib() -> None:
    code = "import sys, zorkmcp.eval, zorkmcp._cli_report; print('matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "False\n"


def test_sigterm_while_the_page_is_written_exits_143_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a scheduler's SIGTERM arrives as the page is about to be written: it stops the command as
    # Ctrl-C does (zorkmcp.cli turns it into SIGINT), and no page, not half of one, is left
    import signal

    import zorkmcp.eval._report
    from zorkmcp.cli import main

    def stopped_here(path: Path, text: str) -> None:
        signal.raise_signal(signal.SIGTERM)
        for _ in range(1000):  # Python runs the signal's handlers between two bytecodes of this loop
            pass
        raise AssertionError("SIGTERM did not stop the command")

    write_run(tmp_path, seeds=2, failed=False)
    monkeypatch.setattr(zorkmcp.eval._report, "write_atomically", stopped_here)
    # pytest started in the background of a script (`pytest &`) inherits SIGINT ignored, and then
    # zorkmcp keeps SIGTERM's default (README, the fault table): the signal would end pytest itself.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main(["report", str(tmp_path)])
    finally:
        signal.signal(signal.SIGINT, ignored)
    assert code == 143
    assert capsys.readouterr().err == "zorkmcp report: interrupted; nothing written\n"
    assert not (tmp_path / "report.html").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # put back after the command


# -- a log without episode_complete, escapes, small screens, the axis ----------------------------------


def _card(html: str, label: str) -> str:
    found = re.search(rf"<div class='card'><b>([^<]*)</b><span>{label}</span></div>", html)
    assert found is not None, label
    return found.group(1)


def test_unfinished_episode_counts_every_turns_tool_calls(tmp_path: Path) -> None:
    events = [e for e in episode_events() if e["event_type"] != "episode_complete"]
    turns = [e for e in events if e["event_type"] == "turn_complete"]
    total = sum(t["tool_calls"] for t in turns)
    assert total > turns[-1]["tool_calls"]  # the last turn's own count is not the total
    html = render_episode_report(write_events(tmp_path / "ev.jsonl", events), tmp_path / "p.html").read_text(
        encoding="utf-8"
    )
    assert "unfinished (no episode_complete)" in html
    assert _card(html, "tool calls") == str(total)
    assert _card(html, "turns / moves") == f"{len(turns)} / {turns[-1]['moves']}"


def test_finished_episode_takes_its_totals_from_episode_complete(tmp_path: Path) -> None:
    events = episode_events()
    end = next(e for e in events if e["event_type"] == "episode_complete")
    html = render_episode_report(write_events(tmp_path / "ev.jsonl", events), tmp_path / "p.html").read_text(
        encoding="utf-8"
    )
    assert _card(html, "tool calls") == str(end["tool_calls"])
    assert "<span>model requests</span>" not in html  # a log from before episode_complete counted them


def test_control_characters_from_the_log_show_as_visible_escapes(tmp_path: Path) -> None:
    hostile = "\x1b[2J\x1b[H\x1b[31mRED\x1b[0m \x9b1m \x07\x7f"
    events = episode_events()
    turn = next(e for e in events if e["event_type"] == "turn_complete")
    turn.update(reasoning=hostile, observation=hostile, action=f"look{hostile}", location=hostile)
    turn["tools"] = [{"name": "think", "server": "thinking", "arguments": hostile, "result": hostile}]
    html = render_episode_report(write_events(tmp_path / "ev.jsonl", events), tmp_path / "p.html").read_text(
        encoding="utf-8"
    )
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", html)
    shown = r"\x1b[2J\x1b[H\x1b[31mRED\x1b[0m \x9b1m \x07\x7f"
    assert html.count(shown) == 6  # game text, reasoning, action, location, arguments, result


def test_pages_fit_a_phone_screen(tmp_path: Path) -> None:
    episode = render_episode_report(
        write_events(tmp_path / "ev.jsonl", episode_events()), tmp_path / "p.html"
    )
    write_run(tmp_path / "run")
    run = render_eval_report(tmp_path / "run")
    viewport = '<meta name="viewport" content="width=device-width, initial-scale=1">'
    for page in (episode, run):
        head = page.read_text(encoding="utf-8").split("</head>")[0]
        assert viewport in head


def test_tool_call_axis_has_whole_number_ticks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zorkmcp.eval import _report

    ticks: list[list[float]] = []
    original = _report._img

    def keep_ticks(fig: Any, alt: str) -> str:
        fig.canvas.draw()
        ticks.append([float(t) for t in fig.axes[1].get_yticks()])
        return original(fig, alt)

    monkeypatch.setattr(_report, "_img", keep_ticks)
    events = episode_events()
    for e in events:
        if e["event_type"] == "turn_complete":
            e["tool_calls"] = e["turn"] % 2  # 0 or 1: the default locator puts ticks at 0.2, 0.4, …
    render_episode_report(write_events(tmp_path / "ev.jsonl", events), tmp_path / "p.html")
    assert len(ticks) == 1
    assert ticks[0]
    assert all(t == int(t) for t in ticks[0]), ticks[0]


def test_several_plays_in_one_log_are_told_apart_by_seed_start_and_turns(tmp_path: Path) -> None:
    """What ``zorkmcp play`` writes: a POSIX timestamp; an episode still playing (or stopped) has no end."""
    first = [{**event, "timestamp": 1795000000.25} for event in episode_events("episode-a", 12)]
    second = [
        {**event, "timestamp": 1795003600.0}
        for event in episode_events("episode-b", 13)
        if event["event_type"] != "episode_complete"
    ]
    log = write_events(tmp_path / "zorkmcp_events.jsonl", first + second)
    with pytest.raises(ReportInputError) as raised:
        render_episode_report(log, tmp_path / "p.html")
    assert str(raised.value).endswith(
        "(episode-a (seed 12, started 2026-11-18 11:06 UTC, 30 turns); episode-b (seed 13, started "
        "2026-11-18 12:06 UTC, 30 turns, unfinished)); the last is the most recent"
    )


def test_a_run_folder_without_its_summary_is_said_to_be_unfinished(tmp_path: Path) -> None:
    """``zorkmcp report`` of a run still going (or killed): no summary.json yet, fewer episodes."""
    records = write_run(tmp_path, seeds=2, failed=False)
    html = render_eval_report(tmp_path).read_text(encoding="utf-8")
    assert (
        "<p class=warn>No summary.json in this folder: the run is still going, or it was stopped before it "
        "could write one. The page shows the 4 episode(s) finished so far; zorkmcp eval --resume with this "
        "folder as --out plays the rest.</p>"
    ) in html
    finished = render_eval_report(tmp_path, episodes=records).read_text(encoding="utf-8")  # as eval draws it
    assert "No summary.json" not in finished

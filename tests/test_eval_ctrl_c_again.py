"""``zorkmcp eval`` and a second (and third) Ctrl-C while a stopped run writes its summary.

Pressing Ctrl-C again because the first seems slow lost ``report.html``, the summary table and the
resume line, and printed the message meant for an interrupt before the run started (once, a
traceback of Jericho's ``FrotzEnv.__del__``). Seen in a real terminal (a tmux pane), with a real
model server on 127.0.0.1 that never answers (the episodes are in flight when Ctrl-C comes) and the
run's ``summary.json`` a named pipe, its first file: the run's writing waits there until the test
reads it, so what comes in between is certain, not a matter of timing.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import weakref
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import trio
from llm_server import rendezvous
from play_support import run_in_tmux, zork1_path

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from llm_server import LLMServer

ZORKMCP = Path(sys.executable).with_name("zorkmcp")
HELD = (
    "zorkmcp eval: stopping; the summary and report.html are being written first (press Ctrl-C again to "
    "stop without them)"
)


def _command(run: Path, base_url: str) -> str:
    return (
        f"{ZORKMCP} eval --game {zork1_path()} --no-mcp --model m --base-url {base_url} --episodes 3 "
        f"--concurrency 2 --turns 2 --out {run}; echo status=$?"
    )


def _drain(pipe: Path) -> bytes:
    """Read the named pipe to its end: the run's write of it, waiting for a reader, goes on."""
    with pipe.open("rb") as reader:
        return reader.read()


def _words(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def _shown(line: str, lines: list[str]) -> bool:
    """Whether the screen shows ``line``, which the terminal may have wrapped anywhere (a long path)."""
    return "".join(line.split()) in "".join("".join(lines).split())


async def test_ctrl_c_again_while_the_summary_is_written_is_held_back_and_the_run_ends_as_after_one(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "summary.json")  # the run's writing waits here until the test reads it
    llm_server.default, asked = rendezvous(2, lambda: None, release=False)  # a model that never answers
    written: list[bytes] = []

    def meanwhile(send: Callable[..., object], wait_for: Callable[[str], None]) -> None:
        trio.from_thread.run(asked.wait)  # both episodes wait for their model
        send("C-c")
        wait_for("0/3 2 stopped")  # the run's loop has ended: its summary is being written
        send("C-c")  # "it seems slow"
        wait_for(HELD)
        written.append(_drain(run / "summary.json"))

    lines = await trio.to_thread.run_sync(
        partial(
            run_in_tmux,
            tmp_path,
            _command(run, llm_server.base_url),
            200,
            40,
            meanwhile=meanwhile,
            watch=True,
        )
    )
    text = _words(lines)
    assert HELD in text
    assert "No episode has finished: nothing to summarize." in text  # what the table says, then
    assert _shown(f"0 episode(s) played, 0 resumed; files in {run} (summary.json, summary.csv)", lines)
    assert _shown(
        "zorkmcp eval: interrupted; the summary covers the finished episodes; to play the rest, run the "
        f"same command with --resume --out {run}",
        lines,
    )
    assert lines[-1] == "status=130"
    assert "Traceback" not in text
    assert "Exception ignored" not in text
    assert json.loads(written[0])["arms"] == {}
    assert (run / "summary.csv").read_text().startswith("arm,seed,score,")


async def test_ctrl_c_a_third_time_stops_the_run_there_and_says_what_was_not_written(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "summary.json")
    llm_server.default, asked = rendezvous(2, lambda: None, release=False)

    def meanwhile(send: Callable[..., object], wait_for: Callable[[str], None]) -> None:
        trio.from_thread.run(asked.wait)
        send("C-c")
        wait_for("0/3 2 stopped")
        send("C-c")
        wait_for(HELD)
        send("C-c")  # the user insists

    lines = await trio.to_thread.run_sync(
        partial(
            run_in_tmux,
            tmp_path,
            _command(run, llm_server.base_url),
            200,
            40,
            meanwhile=meanwhile,
            watch=True,
        )
    )
    text = _words(lines)
    assert _shown(
        "zorkmcp eval: stopped by Ctrl-C before summary.json and summary.csv were written; the finished "
        f"episodes' files are kept; to write them, run the same command with --resume --out {run} (it plays "
        "the episodes not played yet, then writes summary.json, summary.csv and report.html)",
        lines,
    )
    assert "nothing to summarize" not in text
    assert lines[-1] == "status=130"
    assert "Traceback" not in text
    assert sorted(path.name for path in run.iterdir()) == ["summary.json"]  # the pipe, as it was


def test_a_ctrl_c_raised_in_a_finalizer_is_counted_not_printed(capfd: pytest.CaptureFixture[str]) -> None:
    # Python raises KeyboardInterrupt in whatever code runs, a __del__ too (Jericho's FrotzEnv, as the
    # run's games are freed), where it can only print "Exception ignored in: …" and drop it.
    from zorkmcp._signals import ctrl_c_in_finalizers, stops_as_ctrl_c

    class Freed:
        def __del__(self) -> None:
            raise KeyboardInterrupt

    with stops_as_ctrl_c():
        Freed()
        assert ctrl_c_in_finalizers() == 1
    assert capfd.readouterr().err == ""


def test_a_press_that_insists_while_a_finalizer_runs_is_raised_once_it_has_run(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # raised in the __del__, Python would drop it, and the run would go on writing (or wait on)
    from zorkmcp._signals import held_ctrl_c

    class Freed:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)  # the press comes while this finalizer runs

    read, write = os.pipe()

    def press_in_a_finalizer_then_wait() -> None:
        Freed()
        select.select([read], [], [], 60)  # nothing comes: the press, raised once the finalizer ran, ends it

    try:
        with held_ctrl_c("held") as held:
            held.hold(pressed=1)  # one press was held back already: the next one insists
            with pytest.raises(KeyboardInterrupt):
                press_in_a_finalizer_then_wait()
            assert held.pressed == 2
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    finally:
        os.close(read)
        os.close(write)
    assert capfd.readouterr().err == ""


def _a_weakref_callback_frees() -> None:
    class Freed:
        pass

    freed = Freed()
    weakref.finalize(freed, signal.raise_signal, signal.SIGINT)  # the press comes while it runs
    del freed


def _a_generator_is_closed_as_it_is_freed() -> None:
    def steps() -> Iterator[int]:
        try:
            yield 1
        finally:
            signal.raise_signal(signal.SIGINT)  # the press comes while the generator is closed

    suspended = steps()
    next(suspended)
    del suspended


@pytest.mark.parametrize("finalizer", [_a_weakref_callback_frees, _a_generator_is_closed_as_it_is_freed])
def test_a_press_that_insists_in_a_finalizer_the_handler_cannot_see_is_raised_once_it_has_run(
    finalizer: Callable[[], None], capfd: pytest.CaptureFixture[str]
) -> None:
    # neither runs in a __del__ frame: the handler raises there, Python drops it (the hook sees it),
    # and the run would go on waiting (on its summary.json, a named pipe no one reads)
    from zorkmcp._signals import ctrl_c_in_finalizers, held_ctrl_c, stops_as_ctrl_c

    read, write = os.pipe()

    def press_in_a_finalizer_then_wait() -> None:
        finalizer()
        select.select([read], [], [], 60)  # nothing comes: the press, raised again, ends it

    try:
        with stops_as_ctrl_c(), held_ctrl_c("held") as held:
            held.hold(pressed=1)  # one press was held back already: the next one insists
            with pytest.raises(KeyboardInterrupt):
                press_in_a_finalizer_then_wait()
            assert held.pressed == 2
            assert ctrl_c_in_finalizers() == 0  # raised again, not dropped
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    finally:
        os.close(read)
        os.close(write)
    assert capfd.readouterr().err == ""

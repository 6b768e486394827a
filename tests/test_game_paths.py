"""Choosing the game file: --game, GAME, game_file_path, and the MIT release downloaded over real HTTP."""

from __future__ import annotations

import hashlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from zorkmcp.errors import GameError
from zorkmcp.game import (
    ZORK1_MD5,
    ZORK1_URL,
    ZorkGame,
    default_cache_dir,
    default_games_dirs,
    resolve_game_path,
)

ZORK1_Z3 = Path(__file__).resolve().parents[2] / "shared" / "games" / "zork1.z3"


def zork1_bytes() -> bytes:
    """The real Zork I (MIT release 119); skip when the shared games folder is missing."""
    if not ZORK1_Z3.is_file():
        pytest.skip(f"Zork I is not at {ZORK1_Z3} (the shared games folder beside the repository)")
    return ZORK1_Z3.read_bytes()


class GameFileServer:
    """A real HTTP server on 127.0.0.1 that serves one body (and counts the requests)."""

    def __init__(self, body: bytes, status: int = 200) -> None:
        self.body = body
        self.status = status
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(self.path)
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/COMPILED/zork1.z3"

    def __enter__(self) -> GameFileServer:
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def unreachable_url() -> str:
    """A 127.0.0.1 URL whose port nothing listens on (connection refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/zork1.z3"


# -- the order of the sources ----------------------------------------------------------------------


def test_cli_path_wins(tmp_path: Path) -> None:
    story = tmp_path / "mine.z3"
    story.write_bytes(b"x")
    env = {"GAME": str(tmp_path / "other.z3")}
    assert resolve_game_path(str(story), "settings.z3", env=env, cache_dir=tmp_path / "cache") == story


def test_missing_cli_path_names_the_file_and_how_to_pass_one(tmp_path: Path) -> None:
    with pytest.raises(
        GameError, match=r"game file not found: .*nope\.z3 \(from --game\)\. Check the path, or pass it"
    ):
        resolve_game_path(str(tmp_path / "nope.z3"), env={}, cache_dir=tmp_path)


def test_a_folder_is_not_a_game_file(tmp_path: Path) -> None:
    with pytest.raises(GameError, match=r"\(from --game\) is not a file"):
        resolve_game_path(str(tmp_path), env={}, cache_dir=tmp_path)


def test_game_variable_as_a_path(tmp_path: Path) -> None:
    story = tmp_path / "z.z5"
    story.write_bytes(b"x")
    assert resolve_game_path(None, "settings.z3", env={"GAME": str(story)}, cache_dir=tmp_path) == story
    with pytest.raises(GameError, match=r"not found: .*gone\.z3 \(from the GAME environment variable\)"):
        resolve_game_path(None, env={"GAME": str(tmp_path / "gone.z3")}, cache_dir=tmp_path)


def test_game_variable_as_a_name_is_looked_up_in_the_games_folders(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "zork2.z3").write_bytes(b"x")
    found = resolve_game_path(None, "settings.z3", env={"GAME": "zork2"}, games_dirs=[first, second])
    assert found == second / "zork2.z3"
    (first / "zork2.z5").write_bytes(b"x")
    dirs = [first, second]
    assert resolve_game_path(None, env={"GAME": "zork2"}, games_dirs=dirs) == first / "zork2.z5"
    assert resolve_game_path(None, env={"GAME": "zork2.z3"}, games_dirs=dirs) == second / "zork2.z3"
    with pytest.raises(GameError, match=r"GAME=zork2\.z8: no story file named zork2\.z8 in "):
        resolve_game_path(None, env={"GAME": "zork2.z8"}, games_dirs=[first, second])


def test_games_dir_variable_and_defaults(tmp_path: Path) -> None:
    env = {"ZORKMCP_GAMES_DIR": str(tmp_path / "g"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert default_games_dirs(env) == [tmp_path / "g", Path("games"), tmp_path / "xdg" / "zorkmcp" / "games"]
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "zork3.z3").write_bytes(b"x")
    assert resolve_game_path(None, env={**env, "GAME": "zork3"}) == tmp_path / "g" / "zork3.z3"


def test_an_unknown_game_name_lists_the_folders_searched(tmp_path: Path) -> None:
    with pytest.raises(
        GameError, match=r"GAME=zork9: no story file named zork9 .* in .*empty\. Put the file"
    ):
        resolve_game_path(None, env={"GAME": "zork9"}, games_dirs=[tmp_path / "empty"])


def test_settings_path_is_relative_to_its_pyproject(tmp_path: Path) -> None:
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "zork1.z3").write_bytes(b"x")
    found = resolve_game_path(None, "games/zork1.z3", env={}, settings_base=tmp_path, cache_dir=tmp_path)
    assert found == tmp_path / "games" / "zork1.z3"
    with pytest.raises(GameError, match=r"from game_file_path in \[tool\.zorkgpt\.files\]"):
        resolve_game_path(None, "missing.z3", env={}, settings_base=tmp_path, cache_dir=tmp_path)


def test_cache_folder_follows_xdg_cache_home(tmp_path: Path) -> None:
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "zorkmcp" / "games"
    assert default_cache_dir({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "zorkmcp" / "games"
    # A relative XDG_CACHE_HOME is invalid by the spec and ignored.
    assert (
        default_cache_dir({"XDG_CACHE_HOME": "rel", "HOME": str(tmp_path)})
        == tmp_path / ".cache/zorkmcp/games"
    )


# -- the download of the MIT release ---------------------------------------------------------------


def test_download_verifies_and_caches_the_release(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    said: list[str] = []
    with GameFileServer(zork1_bytes()) as server:
        env = {"ZORKMCP_GAME_URL": server.url}
        path = resolve_game_path(None, None, env=env, cache_dir=cache, announce=said.append)
        assert path == cache / "zork1.z3"
        assert hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest() == ZORK1_MD5
        assert said == [
            f"Downloaded Zork I (MIT release 119) from {server.url} to {path} (md5 {ZORK1_MD5} verified)"
        ]
        assert server.requests == ["/COMPILED/zork1.z3"]
        assert sorted(p.name for p in cache.iterdir()) == ["zork1.z3"]  # no temporary file left

        # Already cached and verified: used without asking the server again.
        again = resolve_game_path(None, None, env=env, cache_dir=cache, announce=said.append)
        assert again == path
        assert server.requests == ["/COMPILED/zork1.z3"]
        assert said[-1] == f"Playing Zork I (MIT release 119) from {path}"
    with ZorkGame.open(path, seed=12) as game:
        assert game.location == "West of House"


def test_game_zork1_with_no_file_anywhere_downloads_it(tmp_path: Path) -> None:
    with GameFileServer(zork1_bytes()) as server:
        env = {"GAME": "zork1", "ZORKMCP_GAME_URL": server.url}
        path = resolve_game_path(
            None, None, env=env, games_dirs=[tmp_path / "none"], cache_dir=tmp_path / "c"
        )
        assert path == tmp_path / "c" / "zork1.z3"
        assert len(server.requests) == 1


def test_a_damaged_cached_copy_is_downloaded_again(tmp_path: Path) -> None:
    (tmp_path / "zork1.z3").write_bytes(b"damaged")
    said: list[str] = []
    with GameFileServer(zork1_bytes()) as server:
        path = resolve_game_path(
            None, env={"ZORKMCP_GAME_URL": server.url}, cache_dir=tmp_path, announce=said.append
        )
        assert len(server.requests) == 1
    assert hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest() == ZORK1_MD5
    assert said[0].endswith(f"not {ZORK1_MD5}; downloading it again")


def test_wrong_bytes_fail_the_checksum_and_are_not_saved(tmp_path: Path) -> None:
    wrong = b"<html>not a game</html>"
    with GameFileServer(wrong) as server:
        expected = hashlib.md5(wrong, usedforsecurity=False).hexdigest()
        with pytest.raises(GameError, match=f"has md5 {expected}, expected {ZORK1_MD5} .*it was not saved"):
            resolve_game_path(None, env={"ZORKMCP_GAME_URL": server.url}, cache_dir=tmp_path / "c")
    assert not (tmp_path / "c" / "zork1.z3").exists()


def test_http_errors_are_reported(tmp_path: Path) -> None:
    with GameFileServer(b"missing", status=404) as server, pytest.raises(GameError, match="HTTP 404"):
        resolve_game_path(None, env={"ZORKMCP_GAME_URL": server.url}, cache_dir=tmp_path)


def test_offline_says_where_to_get_the_file_and_how_to_pass_it(tmp_path: Path) -> None:
    url = unreachable_url()
    with pytest.raises(GameError) as caught:
        resolve_game_path(None, None, env={"ZORKMCP_GAME_URL": url}, cache_dir=tmp_path)
    message = str(caught.value)
    assert message.startswith(f"could not download Zork I from {url} (ConnectError")
    for part in [
        ZORK1_URL,
        "historicalsource/zork1",
        "--game PATH",
        "GAME=",
        "game_file_path",
        "[tool.zorkgpt.files]",
    ]:
        assert part in message, part
    assert list(tmp_path.iterdir()) == []


def test_no_download_when_not_allowed(tmp_path: Path) -> None:
    with pytest.raises(
        GameError, match=r"no game file given and .*zork1\.z3 is missing\. Get zork1\.z3 from https://"
    ):
        resolve_game_path(None, env={}, cache_dir=tmp_path, download=False)

"""A loopback chat-completions server that answers every request after a fixed latency (stdlib only).

``python benchmarks/latency_llm.py SECONDS`` prints its port on the first line of stdout, then
answers every ``POST`` (keep-alive) with the agent's final JSON (``{"thinking", "action": "look",
"new_objective": null}``) after ``SECONDS``, and anything else (``zorkmcp eval``'s probe of the
endpoint) with 404 at once. It runs in its own process, so its CPU is not the run's.
"""

from __future__ import annotations

import asyncio
import json
import sys

_BODY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": json.dumps({"thinking": "bench", "action": "look", "new_objective": None}),
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }
).encode()
_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
    + str(len(_BODY)).encode()
    + b"\r\n\r\n"
)

_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            if not head.startswith(b"POST "):  # zorkmcp eval's probe (GET /models): no model, no wait
                writer.write(_NOT_FOUND)
                await writer.drain()
                continue
            await asyncio.sleep(latency)
            writer.write(_HEAD + _BODY)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(latency: float) -> None:
    server = await asyncio.start_server(lambda r, w: _serve(r, w, latency), "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0))

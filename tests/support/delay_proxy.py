"""A TCP proxy that delays every chunk, for browser tests of a slow network.

Chrome's CDP network throttling does not slow a websocket (PITFALLS), so the page is pointed at
this proxy instead of the server. Each direction keeps its order; `hold()` keeps the client's
bytes (its frames to the server) at the proxy until `release()`, so a test can look at the page
while its move has certainly not reached the server. It runs its own asyncio loop in a thread;
every method is called from the test's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time


class DelayProxy:
    """127.0.0.1:`port` -> `target_port`, `up` seconds added client->server, `down` back."""

    def __init__(self, target_port: int, *, up: float = 0.0, down: float = 0.0,
                 target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.up = up
        self.down = down
        self.port = 0
        self.held_chunks = 0  # client chunks that waited for release() (for the test to check)
        self._loop = asyncio.new_event_loop()
        self._open: asyncio.Event | None = None
        self._server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> DelayProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    def stop(self) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            self._gate().set()
            for writer in self._writers:
                writer.close()
            # The pipes end by themselves once their sockets are closed (no task cancelled:
            # a cancelled connection task is logged as an error by asyncio).
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if others:
                await asyncio.wait(others, timeout=2)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def hold(self) -> None:
        """Keep the client's bytes here from now on, until release()."""
        self._loop.call_soon_threadsafe(self._gate().clear)

    def release(self) -> None:
        self._loop.call_soon_threadsafe(self._gate().set)

    def _gate(self) -> asyncio.Event:
        assert self._open is not None
        return self._open

    async def _listen(self) -> None:
        self._open = asyncio.Event()
        self._open.set()
        self._server = await asyncio.start_server(self._pair, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _pair(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter):
        try:
            server_in, server_out = await asyncio.open_connection(*self.target)
        except OSError:
            client_out.close()
            return
        self._writers += [client_out, server_out]
        await asyncio.gather(self._pipe(client_in, server_out, self.up, gated=True),
                             self._pipe(server_in, client_out, self.down, gated=False),
                             return_exceptions=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    delay: float, *, gated: bool) -> None:
        """Copy `reader` to `writer`, each chunk `delay` seconds after it came, in order."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                if gated and not self._gate().is_set():
                    self.held_chunks += 1
                    await self._gate().wait()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not chunk:
                    with contextlib.suppress(OSError):
                        writer.close()
                    return
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.ensure_future(deliver())
        try:
            while True:
                chunk = await reader.read(65536)
                await queue.put((time.monotonic() + delay, chunk))
                if not chunk:
                    break
            await sender
        except (OSError, asyncio.CancelledError):
            sender.cancel()
            with contextlib.suppress(OSError):
                writer.close()

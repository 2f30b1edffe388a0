"""An unauthenticated 200 MB POST does not grow the server's memory by more than a few MB.

The server runs as `pluginsdk server start` runs it (`serve()` in its own process); its resident set is read
from /proc before, and its peak (VmHWM, reset through /proc/<pid>/clear_refs) after the upload.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from tests.server.door import Raw, assert_envelope, raw_request, read_response, rss_kib, served_process
from tests.support.backends import base_config

TOTAL = 200 * 1024 * 1024
CHUNK = 1024 * 1024
ALLOWED_GROWTH_KIB = 5 * 1024


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _upload(port: int, head: bytes, chunked: bool) -> tuple[Raw, int]:
    """Send `head`, then up to 200 MB of body while reading the answer; (answer, bytes sent)."""
    sent = 0
    stop = threading.Event()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)

    def pump() -> None:
        nonlocal sent
        block = b"a" * CHUNK
        piece = b"%x\r\n%s\r\n" % (CHUNK, block) if chunked else block
        try:
            sock.sendall(head)
            while sent < TOTAL and not stop.is_set():
                sock.sendall(piece)
                sent += CHUNK
        except OSError:
            pass  # the server answered and closed: the rest is never read

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        answer = read_response(sock)
    finally:
        stop.set()
        sock.close()
        thread.join(timeout=60)
    return answer, sent


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_unauthenticated_200mb_post_is_413_without_growing_memory(tmp_path: Path, chunked: bool) -> None:
    config = base_config(tmp_path)
    with served_process(config, tmp_path / "server.log") as (port, proc):
        warm = b"POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        assert_envelope(raw_request(port, warm), 401)  # imports and first-request work done before measuring
        framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {TOTAL}"
        head = f"POST /api/v1/templates HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
        assert_envelope(_upload(port, head.encode(), chunked)[0], 413)  # warm the 413 path too
        before = rss_kib(proc.pid)
        Path(f"/proc/{proc.pid}/clear_refs").write_text("5")  # reset the peak to the current resident set
        for _ in range(3):
            answer, sent = _upload(port, head.encode(), chunked)
            assert_envelope(answer, 413, "VALIDATION_ERROR")
            assert answer.headers["connection"] == "close"
        growth = _peak_kib(proc.pid) - before
        assert growth < ALLOWED_GROWTH_KIB, f"peak grew by {growth} KiB (sent {sent} bytes)"
        assert_envelope(raw_request(port, warm), 401)  # and it still serves

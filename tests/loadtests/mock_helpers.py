"""Helpers shared by the tests that talk to the mock provider over real HTTP: the mock as a
process, and a raw-socket client that shows exactly what came over the wire and how the
connection ended (no HTTP library's idea of it)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time

from loadtests.wire import FAULTS, PROTOCOLS, applies

PATHS = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    "bedrock-converse": "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream",
    "bedrock-invoke": "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream",
    "ollama": "/api/chat",
}
CASES = [(d, f) for d in PROTOCOLS for f in FAULTS if applies(d, f)]
STALL_SECONDS = 0.6


class Mock:
    """python -m loadtests.mock_provider on a free port, its log in a file."""

    def __init__(self, tmp_path, *extra: str) -> None:
        self.log_path = tmp_path / "mock.jsonl"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "loadtests.mock_provider",
                "--port",
                "0",
                "--sentences",
                "6",
                "--stall-seconds",
                str(STALL_SECONDS),
                "--log",
                str(self.log_path),
                *extra,
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert match, f"the mock did not say where it listens: {line!r}"
        self.port = int(match[1])

    def entries(self) -> list[dict]:
        """The log's entries; the mock writes each before the end of its answer goes out."""
        written = self.log_path.read_text()
        return [json.loads(line) for line in written[: written.rfind("\n") + 1].splitlines()]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.process.stderr.close()


def request(port: int, method: str, path: str, body: dict | None = None, headers: dict | None = None) -> dict:
    """One request on a fresh connection, read with a raw socket: the status, the headers, the
    body's bytes as they came (de-chunked), how the connection ended, and the longest silence
    once the body had begun (an answer held back and sent whole shows none, however long the
    wait for it)."""
    data = json.dumps(body).encode() if body is not None else b""
    head = [
        f"{method} {path} HTTP/1.1",
        f"host: 127.0.0.1:{port}",
        "connection: close",
        f"content-length: {len(data)}",
        "content-type: application/json",
    ]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    raw, ending, longest_gap, last = b"", "eof", 0.0, None
    try:
        while True:
            piece = sock.recv(65536)
            now = time.monotonic()
            if last is not None:
                longest_gap = max(longest_gap, now - last)
            if not piece:
                break
            raw += piece
            head_end = raw.find(b"\r\n\r\n")
            if head_end >= 0 and len(raw) > head_end + 4:
                last = now
    except ConnectionResetError:
        ending = "reset"
    finally:
        sock.close()
    header_bytes, _, rest = raw.partition(b"\r\n\r\n")
    lines = header_bytes.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = dict(line.lower().split(": ", 1) for line in lines[1:])
    if fields.get("transfer-encoding") == "chunked":
        rest, complete = dechunk(rest)
        if not complete and ending == "eof":
            ending = "eof-inside-chunking"
    elif method == "HEAD":
        rest = b""
    return {"status": status, "headers": fields, "body": rest, "ending": ending, "longest_gap": longest_gap}


def dechunk(data: bytes) -> tuple[bytes, bool]:
    """The body of a chunked message, and whether its last chunk came."""
    body, at = b"", 0
    while True:
        end = data.find(b"\r\n", at)
        if end < 0:
            return body, False
        size = int(data[at:end], 16)
        if size == 0:
            return body, True
        body += data[end + 2 : end + 2 + size]
        at = end + 2 + size + 2


def generation(protocol: str, stream: bool = True) -> dict:
    body = {"model": "mock-model", "stream": stream, "messages": [{"role": "user", "content": "hello"}]}
    if protocol == "chat":
        body["stream_options"] = {"include_usage": True}
    if protocol == "gemini":
        body = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
    if protocol == "bedrock-converse":
        body = {"messages": [{"role": "user", "content": [{"text": "hello"}]}]}
    if protocol == "bedrock-invoke":
        body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 256, "messages": body["messages"]}
    return body


def stream_path(protocol: str, prefix: str = "") -> str:
    return prefix + PATHS[protocol]

"""A fault-injecting mock LLM provider that speaks the streaming protocols byte for byte.

    python -m loadtests.mock_provider --port 9100            # on 127.0.0.1
    python -m loadtests.mock_provider --port 9100 --log requests.jsonl --sentences 20

Endpoints, as the providers have them: ``POST /v1/chat/completions``, ``POST /v1/responses``,
``POST /v1/messages`` (and ``/v1/messages/count_tokens``), Gemini ``POST
/v1beta/models/{model}:streamGenerateContent?alt=sse`` (and ``:generateContent``),
Bedrock's ``POST /model/{modelId}/converse-stream`` and ``/model/{modelId}/invoke-with-response-stream``
(and ``/converse``, ``/invoke``; any SigV4 signature, or none, is accepted), Ollama's ``POST
/api/chat`` and ``/api/generate``, ``GET /v1/models``, ``HEAD /``.  A request without ``"stream":
true`` (Gemini's ``generateContent``, Bedrock's ``converse`` and ``invoke``, Ollama's
``"stream": false``) gets the whole answer as one JSON body.

The fault is chosen by a path prefix, since every client lets you set a base URL and not every
client lets you add a header: base URL ``http://127.0.0.1:9100/F4/v1`` injects F4 into every
answer; ``/F1-once/v1`` only into the first answer on that prefix (its retries and every later
request get a healthy one), and ``/F1-once.run7/v1`` is another prefix with a "once" of its own.
The faults are loadtests.wire.FAULTS; without a prefix, F0.  A whole answer (a client's
fallback after a broken stream) carries only what a model can say in one: F4 and F5; the
transport faults belong to streams.

Every request is logged as one JSON line (``--log``, else stderr): what was asked, which fault
applied, the bytes actually written, and whether the terminal event went on the wire.  That is
the proof that a fault reached the client.  The line is written before the answer's end goes
out (a stream's once its body is out and before its ending: the last chunk, a reset, a stall),
so a client that saw the answer end always finds it.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

from .wire import DEFAULT_MODELS, FAULTS, answer_text, fault_for, reasoning_text, wire

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024
# A fault prefix: the fault, then "-once" (and a name of its own for the once), then the API path.
PREFIX = re.compile(
    r"^/(?P<fault>" + "|".join(sorted(FAULTS, key=len, reverse=True)) + r")(?P<once>-once(?:\.[\w-]+)?)?(?=/)"
)
GEMINI = re.compile(
    r"^/v1beta/models/(?P<model>[^/:]+):(?P<method>streamGenerateContent|"
    r"generateContent|countTokens)$"
)
BEDROCK = re.compile(
    r"^/model/(?P<model>[^/]+)/(?P<operation>converse-stream|converse|invoke-with-response-stream|invoke)$"
)


class BadRequest(Exception):
    pass


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.target).query)

    def json(self) -> dict:
        try:
            value = json.loads(self.body or b"{}")
        except (ValueError, RecursionError):
            raise BadRequest("the body is not JSON") from None
        if not isinstance(value, dict):
            raise BadRequest("the body is not a JSON object")
        return value


@dataclass
class Settings:
    text: str
    reasoning: str
    stall_seconds: float = 5.0
    delay_seconds: float = 0.0
    log: object = None  # a file, or None for stderr
    onces: set = field(default_factory=set)  # the "-once" prefixes already spent


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """One HTTP/1.1 request, or None when the client closed the connection between requests."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise BadRequest("the request ended inside its headers") from None
        return None
    except asyncio.LimitOverrunError:
        raise BadRequest("the request's headers are too large") from None
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, _version = lines[0].split(" ", 2)
    except ValueError:
        raise BadRequest("a malformed request line") from None
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("expect", "").lower() == "100-continue":
        raise _Continue(method, target, headers)
    return await _read_body(reader, method, target, headers)


class _Continue(Exception):
    def __init__(self, method, target, headers):
        super().__init__("100-continue")
        self.parts = (method, target, headers)


async def _read_body(reader, method, target, headers) -> Request:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # the (empty) trailer
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
            if len(body) > MAX_BODY_BYTES:
                raise BadRequest("the body is too large")
        return Request(method, target, headers, bytes(body))
    length = int(headers.get("content-length") or 0)
    if length > MAX_BODY_BYTES:
        raise BadRequest("the body is too large")
    return Request(method, target, headers, await reader.readexactly(length) if length else b"")


class Connection:
    """Writes one response to one client connection and records what went on the wire."""

    def __init__(self, writer: asyncio.StreamWriter, keep_alive: bool) -> None:
        self.writer = writer
        self.keep_alive = keep_alive
        self.bytes_sent = 0
        self.digest = hashlib.sha256()  # of the body bytes sent, to prove what a proxy passed on

    async def head(self, status: int, headers: dict[str, str]) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "OK")
        lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in headers.items()]
        if not self.keep_alive:
            lines.append("connection: close")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        await self.writer.drain()

    async def chunk(self, data: bytes) -> None:
        if data:
            self.writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.bytes_sent += len(data)
            self.digest.update(data)
            await self.writer.drain()

    async def end_chunks(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    async def whole(self, status: int, body: bytes, content_type: str = "application/json"):
        await self.head(status, {"content-type": content_type, "content-length": str(len(body))})
        self.writer.write(body)
        self.bytes_sent += len(body)
        self.digest.update(body)
        await self.writer.drain()

    async def reset(self) -> None:
        """End the connection with a TCP RST, once the client has had a moment to read."""
        await asyncio.sleep(0.2)
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


class MockProvider:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def log(self, entry: dict) -> None:
        # One write of the whole line: a reader never meets half of one.
        target = self.settings.log or sys.stderr
        target.write(json.dumps(entry) + "\n")
        target.flush()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    request = await read_request(reader)
                except _Continue as pending:
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    await writer.drain()
                    request = await _read_body(reader, *pending.parts)
                if request is None:
                    return
                keep_alive = request.headers.get("connection", "").lower() != "close"
                connection = Connection(writer, keep_alive)
                try:
                    ended_cleanly = await self.respond(request, connection)
                except BadRequest as exc:
                    body = json.dumps({"error": {"message": str(exc), "type": "invalid_request_error"}}).encode()
                    await connection.whole(400, body)
                    ended_cleanly = True
                if not (ended_cleanly and keep_alive):
                    if ended_cleanly:
                        writer.close()
                    return
        except (ConnectionError, asyncio.IncompleteReadError, BadRequest):
            pass
        finally:
            if not writer.transport.is_closing():
                writer.close()

    async def respond(self, request: Request, connection: Connection) -> bool:
        """Answer one request; False if the connection must not be used again."""
        path = request.path
        fault, once = "F0", None
        prefix = PREFIX.match(path)
        if prefix:
            fault, once = prefix["fault"], prefix["once"] and prefix.group(0)
            path = path[prefix.end() :]
        # The headers' names only (their values hold credentials), to show what a client sent.
        entry = {
            "at": time.time(),
            "method": request.method,
            "path": request.path,
            "user_agent": request.headers.get("user-agent"),
            "fault": fault,
            "host": request.headers.get("host"),
            "headers": sorted(request.headers),
        }
        # Each answer is logged before it goes out, so that a client that has read it finds it.
        if request.method == "HEAD":
            self.log({**entry, "status": 200, "kind": "probe"})
            await connection.head(200, {"content-length": "0"})
            return True
        if request.method == "GET" and path.rstrip("/") in ("/v1/models", "/models"):
            models = [
                {"id": m, "object": "model", "created": 1764590400, "owned_by": "mock"} for m in DEFAULT_MODELS.values()
            ]
            self.log({**entry, "status": 200, "kind": "models"})
            await connection.whole(200, json.dumps({"object": "list", "data": models}).encode())
            return True
        protocol, model, streamed, body = self.route(request, path)
        if protocol is None:
            self.log({**entry, "status": 404, "kind": "unknown"})
            await connection.whole(
                404,
                json.dumps(
                    {"error": {"message": f"no such endpoint: {request.method} {path}", "type": "not_found_error"}}
                ).encode(),
            )
            return True
        if protocol in ("count_tokens", "gemini_count"):
            counted = {"input_tokens": 12} if protocol == "count_tokens" else {"totalTokens": 12}
            self.log({**entry, "status": 200, "kind": "count_tokens"})
            await connection.whole(200, json.dumps(counted).encode())
            return True
        # A once applies to the first generation on its prefix; a whole (non-streamed) answer
        # can only say what a model says (F4, F5): the transport faults are the stream's.
        if once and once in self.settings.onces:
            applied = "F0"
        else:
            applied = fault
            if once:
                self.settings.onces.add(once)
        if not streamed and applied not in ("F4", "F5"):
            applied = "F0"
        applied = fault_for(protocol, applied)
        entry.update(protocol=protocol, model=model, stream=streamed, applied=applied, once=bool(once))
        if not streamed:
            answer = self.whole_answer(protocol, applied, model, body)
            self.log(
                {
                    **entry,
                    "status": 200,
                    "kind": "whole",
                    "bytes_sent": len(answer),
                    "terminal_sent": True,
                    "ending": "close",
                }
            )
            await connection.whole(200, answer)
            return True
        sent = wire(
            protocol,
            applied,
            text=self.settings.text,
            reasoning=self.settings.reasoning if applied != "F0" else "",
            model=model,
            usage=self.wants_usage(protocol, body),
            seed=int(entry["at"] * 1000) % (1 << 30),
            generate=bool(body.get("ollama_generate")),
        )
        await connection.head(
            200,
            {
                "content-type": sent.content_type,
                "cache-control": "no-cache",
                "transfer-encoding": "chunked",
                "x-request-id": f"mock-{int(entry['at'] * 1e6)}",
            },
        )
        for piece in sent.pieces:
            await connection.chunk(piece)
            if self.settings.delay_seconds:
                await asyncio.sleep(self.settings.delay_seconds)
        # Every byte of the body is out: the entry is logged now, before the ending (the last
        # chunk, the reset or the stall), so that a client that has seen the whole answer end
        # can read it, and nobody reads the log before it is written.
        self.log(
            {
                **entry,
                "status": 200,
                "kind": "stream",
                "bytes_sent": connection.bytes_sent,
                "sha256": connection.digest.hexdigest(),
                "events_sent": len(sent.pieces),
                "terminal_sent": sent.terminal_sent,
                "ending": sent.ending,
                "text_chars": sent.text_chars,
            }
        )
        if sent.ending == "reset":
            await connection.reset()
            return False
        if sent.ending == "stall":
            await asyncio.sleep(self.settings.stall_seconds)
        await connection.end_chunks()
        return True

    @staticmethod
    def route(request: Request, path: str):
        """(protocol, model, streamed, body) of a generation request; protocol None if unknown."""
        if request.method != "POST":
            return None, None, False, {}
        path = path.rstrip("/")
        gemini = GEMINI.match(path)
        if gemini:
            body = request.json()
            if gemini["method"] == "countTokens":
                return "gemini_count", None, False, body
            streamed = gemini["method"] == "streamGenerateContent"
            return "gemini", gemini["model"], streamed, body
        bedrock = BEDROCK.match(path)
        if bedrock:
            operation = bedrock["operation"]
            protocol = "bedrock-converse" if operation.startswith("converse") else "bedrock-invoke"
            return protocol, unquote(bedrock["model"]), operation.endswith("-stream"), request.json()
        if path.endswith(("/api/chat", "/api/generate")):  # Ollama streams unless told not to
            body = request.json()
            body["ollama_generate"] = path.endswith("/api/generate")
            model = str(body.get("model") or DEFAULT_MODELS["ollama"])
            return "ollama", model, body.get("stream", True) is not False, body
        for suffix, protocol in (
            ("/chat/completions", "chat"),
            ("/responses", "responses"),
            ("/messages/count_tokens", "count_tokens"),
            ("/messages", "anthropic"),
        ):
            if path.endswith(suffix):
                body = request.json()
                model = str(body.get("model") or DEFAULT_MODELS.get(protocol, "mock"))
                return protocol, model, bool(body.get("stream")), body
        return None, None, False, {}

    @staticmethod
    def wants_usage(protocol: str, body: dict) -> bool:
        if protocol != "chat":
            return True
        return bool((body.get("stream_options") or {}).get("include_usage"))

    def whole_answer(self, protocol: str, fault: str, model: str, body: dict) -> bytes:
        """The answer of a request without streaming, as one JSON body."""
        text = self.settings.text
        cut = fault in ("F4", "F5")
        if cut:
            text = "" if fault == "F5" else text[: len(text) // 2]
        words = len(text.split())
        if protocol == "chat":
            answer = {
                "id": "chatcmpl-mockwhole",
                "object": "chat.completion",
                "created": 1764590400,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "length" if cut else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 24, "completion_tokens": words, "total_tokens": 24 + words},
            }
        elif protocol == "responses":
            answer = {
                "id": "resp_mockwhole",
                "object": "response",
                "created_at": 1764590400,
                "status": "incomplete" if cut else "completed",
                "model": model,
                "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
                "error": None,
                "output": [
                    {
                        "id": "msg_mockwhole",
                        "type": "message",
                        "status": "incomplete" if cut else "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                ],
                "usage": {"input_tokens": 24, "output_tokens": words, "total_tokens": 24 + words},
            }
        elif protocol == "bedrock-converse":
            answer = {
                "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
                "stopReason": "max_tokens" if cut else "end_turn",
                "usage": {"inputTokens": 24, "outputTokens": words, "totalTokens": 24 + words},
                "metrics": {"latencyMs": 1630},
            }
        elif protocol == "ollama":
            answer = {"model": model, "created_at": "2025-12-01T12:00:00.000000Z"}
            if body.get("ollama_generate"):
                answer["response"] = text
            else:
                answer["message"] = {"role": "assistant", "content": text}
            answer.update(done=True, done_reason="length" if cut else "stop", eval_count=words)
        elif protocol in ("anthropic", "bedrock-invoke"):
            answer = {
                "id": "msg_01mockwhole",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "max_tokens" if cut else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 24, "output_tokens": words},
            }
        else:
            answer = {
                "candidates": [
                    {
                        "content": {"parts": [{"text": text}], "role": "model"},
                        "finishReason": "MAX_TOKENS" if cut else "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {"promptTokenCount": 24, "candidatesTokenCount": words, "totalTokenCount": 24 + words},
                "modelVersion": model,
            }
        return json.dumps(answer).encode()


async def serve(host: str, port: int, settings: Settings, ready=None) -> None:
    provider = MockProvider(settings)
    server = await asyncio.start_server(provider.handle, host, port, limit=MAX_HEADER_BYTES)
    if ready is not None:
        ready(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.mock_provider", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument(
        "--sentences", type=int, default=12, help="the answer's length: sentences that each say where they stand"
    )
    parser.add_argument("--text", help="the answer's text instead")
    parser.add_argument(
        "--stall-seconds", type=float, default=5.0, help="how long the stall fault sends nothing before it closes"
    )
    parser.add_argument("--delay-ms", type=float, default=0.0, help="a pause between events")
    parser.add_argument("--log", help="append the JSON lines here instead of stderr")
    args = parser.parse_args(argv)
    log = open(args.log, "a") if args.log else None
    settings = Settings(
        text=args.text or answer_text(args.sentences),
        reasoning=reasoning_text(4),
        stall_seconds=args.stall_seconds,
        delay_seconds=args.delay_ms / 1000,
        log=log,
    )

    def ready(port: int) -> None:
        print(
            f"mock provider on http://{args.host}:{port} (faults by path prefix: /F4/v1, /F1-once/v1, ...)",
            file=sys.stderr,
            flush=True,
        )

    try:
        asyncio.run(serve(args.host, args.port, settings, ready))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

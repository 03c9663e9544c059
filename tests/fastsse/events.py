"""Stream builders for the scanner tests: the bytes each provider puts on the wire (see
shared/PROTOCOLS.md), written by small per-protocol helpers; no corpus file is read here.

Chat chunks as ``data: {json}``, Responses events as ``event: <type>`` + ``data:`` with
``sequence_number``, Anthropic events named by ``event:`` (optionally padded with spaces
before the closing brace), Gemini chunks with ``": "`` JSON and ``\\r\\n\\r\\n`` framing.
"""

from __future__ import annotations

import json

from fastsse import PROTOCOLS  # noqa: F401  (the tests take the protocols from here, with their builders)
from fastsse._protocols import FRAMING_SSE, FRAMINGS
from loadtests import eventstream as es

SSE_PROTOCOLS = tuple(p for p in PROTOCOLS if FRAMINGS[p] == FRAMING_SSE)  # the WHATWG rules apply


def _json(obj, gemini: bool = False) -> bytes:
    # Gemini puts a space after every colon ("candidates": [), OpenAI/Anthropic write compact JSON.
    return json.dumps(obj, separators=(",", ": ") if gemini else (",", ":"), ensure_ascii=False).encode()


# =============================================================================================
# chat (OpenAI Chat Completions and compatibles)
# =============================================================================================
NO_KEY = object()  # leave the finish_reason key out entirely (Snowflake, Z.ai)


def choice(index=0, finish=None, **delta):
    c = {"index": index, "delta": delta, "logprobs": None}
    if finish is not NO_KEY:
        c["finish_reason"] = finish
    return c


def chat_chunk(*choices, model="gpt-4o-mini-2024-07-18", **top) -> bytes:
    obj = {
        "id": "chatcmpl-BRq8xY2mT4kLz9wQe",
        "object": "chat.completion.chunk",
        "created": 1745923011,
        "model": model,
        "system_fingerprint": "fp_96c46af214",
        "choices": list(choices),
    }
    obj.update(top)
    return b"data: " + _json(obj) + b"\n\n"


def chat_usage(**extra) -> bytes:
    """The include_usage chunk: empty choices, totals, after the finish chunk."""
    usage = {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29}
    return chat_chunk(usage=usage, **extra)


def tool_call(index, arguments, id=None, name=None):
    call = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        call = {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return call


CHAT_DONE = b"data: [DONE]\n\n"


def chat(*chunks, done=True) -> bytes:
    return b"".join(chunks) + (CHAT_DONE if done else b"")


def chat_text(*pieces, finish="stop", usage=False, done=True) -> bytes:
    """role chunk, one chunk per text piece, finish chunk, optional usage chunk, [DONE]."""
    chunks = [chat_chunk(choice(role="assistant", content="", refusal=None))]
    chunks += [chat_chunk(choice(content=p)) for p in pieces]
    if finish is not None:
        chunks.append(chat_chunk(choice(finish=finish)))
    if usage:
        chunks.append(chat_usage())
    return chat(*chunks, done=done)


def chat_tool_stream(*arg_pieces, name="get_weather", finish="tool_calls") -> bytes:
    return chat(
        chat_chunk(choice(role="assistant", content=None)),
        chat_chunk(choice(tool_calls=[tool_call(0, "", id="call_Jm2Wh1yEaYG4", name=name)])),
        *[chat_chunk(choice(tool_calls=[tool_call(0, p)])) for p in arg_pieces],
        chat_chunk(choice(finish=finish)),
    )


def chat_function_call(*arg_pieces, name="repl", model="gpt-3.5-turbo-0613", finish="function_call"):
    """Legacy function calling (gpt-3.5-turbo-0613): delta.function_call, named on its first
    fragment, its arguments in the fragments after; finish_reason "function_call"."""
    first = {"role": "assistant", "content": None, "function_call": {"name": name, "arguments": ""}}
    return chat(
        chat_chunk(choice(**first), model=model),
        *[chat_chunk(choice(function_call={"arguments": p}), model=model) for p in arg_pieces],
        chat_chunk(choice(finish=finish), model=model),
    )


def tgi_stream(*pieces, finish="eos_token"):
    """Hugging Face TGI: an empty id, model "tgi", "" as the finish reason of every chunk
    before the last (TGI 2.3), then its own finish reason."""

    def tgi(delta, finish_reason):
        return chat_chunk(
            choice(finish=finish_reason, **delta), model="tgi", id="", system_fingerprint="2.3.1-sha-a094729-rocm"
        )

    return chat(
        tgi({"role": "assistant", "content": pieces[0]}, ""),
        *[tgi({"content": p}, "") for p in pieces[1:]],
        tgi({}, finish),
    )


def openrouter_finish(*pieces, finish, native, model="google/gemini-2.5-flash"):
    """OpenRouter: its normalized finish_reason beside the upstream's native_finish_reason."""
    last = choice(finish=finish)
    last["native_finish_reason"] = native
    return b": OPENROUTER PROCESSING\n\n" + chat(
        *[chat_chunk(choice(content=p), model=model) for p in pieces],
        chat_chunk(last, model=model),
        chat_usage(model=model),
    )


def mistral_thinking(t):
    """Magistral: delta.content is a list of typed parts; reasoning is a "thinking" part."""
    return [{"type": "thinking", "thinking": [{"type": "text", "text": t}]}]


def chat_reasoning(*thoughts, key="reasoning_content", model="deepseek-reasoner") -> list[bytes]:
    return [chat_chunk(choice(role="assistant", content=None, **{key: ""}), model=model)] + [
        chat_chunk(choice(content=None, **{key: t}), model=model) for t in thoughts
    ]


# =============================================================================================
# responses (OpenAI Responses)
# =============================================================================================
RESP_ID = "resp_68c42d0fb418819dbfa579f69406b495"
MSG_ID = "msg_68c42d1d0878819d8266007cd3d1402c"
RS_ID = "rs_68c42d1d0878819d8266007cd3d1403e"
FC_ID = "fc_68c42d1d0878819d8266007cd3d1404f"
R_MODEL = "gpt-5-mini-2025-08-07"


def r(type_, **fields):
    return {"type": type_, **fields}


def _response(status, output=(), **extra):
    return {
        "id": RESP_ID,
        "object": "response",
        "created_at": 1757687055,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": R_MODEL,
        "output": list(output),
        **extra,
    }


def r_created():
    return [
        r("response.created", response=_response("in_progress")),
        r("response.in_progress", response=_response("in_progress")),
    ]


def r_message(*deltas):
    events = [
        r(
            "response.output_item.added",
            output_index=0,
            item={"id": MSG_ID, "type": "message", "status": "in_progress", "content": [], "role": "assistant"},
        ),
        r(
            "response.content_part.added",
            item_id=MSG_ID,
            output_index=0,
            content_index=0,
            part={"type": "output_text", "annotations": [], "text": ""},
        ),
    ]
    events += [
        r("response.output_text.delta", item_id=MSG_ID, output_index=0, content_index=0, delta=d, logprobs=[])
        for d in deltas
    ]
    text = "".join(deltas)
    events += [
        r("response.output_text.done", item_id=MSG_ID, output_index=0, content_index=0, text=text, logprobs=[]),
        r(
            "response.output_item.done",
            output_index=0,
            item={
                "id": MSG_ID,
                "type": "message",
                "status": "completed",
                "content": [{"type": "output_text", "annotations": [], "text": text}],
                "role": "assistant",
            },
        ),
    ]
    return events


def r_reasoning(*summary_deltas, kind="reasoning_summary_text"):
    events = [r("response.output_item.added", output_index=0, item={"id": RS_ID, "type": "reasoning", "summary": []})]
    events += [
        r(f"response.{kind}.delta", item_id=RS_ID, output_index=0, summary_index=0, delta=d) for d in summary_deltas
    ]
    return events


def r_function_call(arguments, name="get_weather"):
    return [
        r(
            "response.output_item.added",
            output_index=0,
            item={
                "id": FC_ID,
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": "call_sVidsfFJ6zlz",
                "name": name,
            },
        ),
        r("response.function_call_arguments.delta", item_id=FC_ID, output_index=0, delta=arguments),
        r("response.function_call_arguments.done", item_id=FC_ID, output_index=0, arguments=arguments),
    ]


def r_completed(text=""):
    output = [{"type": "message", "content": [{"type": "output_text", "text": text}]}] if text else []
    return r(
        "response.completed",
        response=_response("completed", output, usage={"input_tokens": 12, "output_tokens": 9, "total_tokens": 21}),
    )


def r_completed_saying(status, reason=None, **extra):
    """A response.completed whose response contradicts its name (as a wrong mock or a proxy
    may send it; a real server sends response.incomplete / response.failed instead)."""
    details = None if reason is None else {"reason": reason}
    return r("response.completed", response=_response(status, incomplete_details=details, **extra))


def r_incomplete(reason):
    details = None if reason is None else {"reason": reason}
    return r("response.incomplete", response=_response("incomplete", incomplete_details=details))


def r_failed(code, message):
    return r("response.failed", response=_response("failed", error={"code": code, "message": message}))


def r_refusal(delta):
    return r("response.refusal.delta", item_id=MSG_ID, output_index=0, content_index=0, delta=delta)


def responses(*events, seqs=None, event_lines=True, done=False, comments=0) -> bytes:
    """Frame events; sequence_number counts 0, 1, 2, ... unless seqs says otherwise (None: omit)."""
    out = [b": OPENROUTER PROCESSING\n\n"] * comments
    numbers = list(range(len(events))) if seqs is None else seqs
    for event, seq in zip(events, numbers, strict=True):
        if seq is not None:
            event = {**event, "sequence_number": seq}
        head = b"event: " + event["type"].encode() + b"\n" if event_lines else b""
        out.append(head + b"data: " + _json(event) + b"\n\n")
    if done:
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def responses_text(*deltas, **kw) -> bytes:
    return responses(*r_created(), *r_message(*deltas), r_completed("".join(deltas)), **kw)


# =============================================================================================
# anthropic (Messages)
# =============================================================================================
A_MODEL = "claude-sonnet-4-5-20250929"


def a(type_, **fields):
    return {"type": type_, **fields}


def a_start(model=A_MODEL):
    message = {
        "id": "msg_01UdjYBBipA9omjYhicnevgq", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }  # fmt: skip
    return a("message_start", message=message)


PING = a("ping")


def a_text(index, *texts):
    return [
        a("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *[a("content_block_delta", index=index, delta={"type": "text_delta", "text": t}) for t in texts],
        a("content_block_stop", index=index),
    ]


def a_thinking(index, *thoughts):
    return [
        a("content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""}),
        *[a("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": t}) for t in thoughts],
        a("content_block_delta", index=index, delta={"type": "signature_delta", "signature": "EqQBCkYIBxgCKkBk"}),
        a("content_block_stop", index=index),
    ]


def a_tool(index, *partials, name="get_weather", stop=True):
    block = {"type": "tool_use", "id": "toolu_01EKqbqmZrGRXy18eN7m9kvY", "name": name, "input": {}}
    events = [a("content_block_start", index=index, content_block=block)]
    events += [
        a("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p}) for p in partials
    ]
    if stop:
        events.append(a("content_block_stop", index=index))
    return events


def a_end(stop_reason, **delta_extra):
    return [
        a(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None, **delta_extra},
            usage={"output_tokens": 42},
        ),
        a("message_stop"),
    ]


def a_server_tool(index, query):
    block = {"type": "server_tool_use", "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE", "name": "web_search", "input": {}}
    return [
        a("content_block_start", index=index, content_block=block),
        a(
            "content_block_delta",
            index=index,
            delta={"type": "input_json_delta", "partial_json": json.dumps({"query": query})},
        ),
        a("content_block_stop", index=index),
    ]


def a_error(error_type, message):
    return a("error", error={"type": error_type, "message": message})


def anthropic(*events, pad=0) -> bytes:
    """Frame events; pad > 0 puts that many spaces before each closing brace, as the API does."""
    out = []
    for event in events:
        body = b'{"type": "ping"}' if event == PING else _json(event)
        if pad:
            body = body[:-1] + b" " * pad + b"}"
        out.append(b"event: " + event["type"].encode() + b"\ndata: " + body + b"\n\n")
    return b"".join(out)


def anthropic_text(*texts, stop_reason="end_turn", pad=0) -> bytes:
    return anthropic(a_start(), *a_text(0, *texts), *a_end(stop_reason), pad=pad)


# =============================================================================================
# gemini (streamGenerateContent?alt=sse)
# =============================================================================================
G_MODEL = "gemini-2.5-flash"


def text(t):
    return {"text": t}


def thought(t):
    return {"text": t, "thought": True}


def function_call(name, args):
    return {"functionCall": {"name": name, "args": args}, "thoughtSignature": "CiQBcsjafJ2bT0S3"}


def cand(*parts, finish=None, index=None, **extra):
    c = {"content": {"parts": list(parts), "role": "model"}} if parts else {}
    if finish is not None:
        c["finishReason"] = finish
    if index is not None:
        c["index"] = index
    c.update(extra)
    return c


def g_chunk(*candidates, **top) -> bytes:
    obj = {}
    if candidates:
        obj["candidates"] = list(candidates)
    obj.update(top)
    obj["usageMetadata"] = {"promptTokenCount": 9, "totalTokenCount": 9}
    obj["modelVersion"] = G_MODEL
    obj["responseId"] = "w1peaMz6INOvnvgPgYfPiQY"
    return b"data: " + _json(obj, gemini=True) + b"\r\n\r\n"


def g_bare_error(code, message, status) -> bytes:
    """A mid-stream error as Google sends it: pretty-printed JSON, no data: framing."""
    return json.dumps({"error": {"code": code, "message": message, "status": status}}, indent=2).encode() + b"\n"


def g_final(*parts, finish="STOP", **extra) -> bytes:
    return g_chunk(cand(*parts, finish=finish, **extra))


def gemini(*chunks) -> bytes:
    return b"".join(chunks)


def gemini_text(*pieces, finish="STOP") -> bytes:
    chunks = [g_chunk(cand(text(p))) for p in pieces[:-1]]
    chunks.append(g_chunk(cand(text(pieces[-1]), finish=finish)))
    return gemini(*chunks)


# =============================================================================================
# bedrock-converse (ConverseStream): AWS event stream frames, one per event
# =============================================================================================
C_START = es.event("messageStart", {"role": "assistant"})


def c_delta(index, **delta) -> bytes:
    return es.event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})


def c_text(index, *texts) -> list[bytes]:
    """A text block: deltas and its stop (text blocks have no start event)."""
    return [c_delta(index, text=t) for t in texts] + [es.event("contentBlockStop", {"contentBlockIndex": index})]


def c_reasoning(index, *texts) -> list[bytes]:
    deltas = [c_delta(index, reasoningContent={"text": t}) for t in texts]
    deltas.append(c_delta(index, reasoningContent={"signature": "EqQBCkYIBxgCKkBk"}))
    return deltas + [es.event("contentBlockStop", {"contentBlockIndex": index})]


def c_tool(index, *inputs, name="get_weather") -> list[bytes]:
    start = {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": name}}
    return [
        es.event("contentBlockStart", {"contentBlockIndex": index, "start": start}),
        *[c_delta(index, toolUse={"input": i}) for i in inputs],
        es.event("contentBlockStop", {"contentBlockIndex": index}),
    ]


def c_stop(reason, metadata=True) -> list[bytes]:
    events = [es.event("messageStop", {"stopReason": reason})]
    if metadata:
        usage = {"inputTokens": 25, "outputTokens": 12, "totalTokens": 37}
        events.append(es.event("metadata", {"usage": usage, "metrics": {"latencyMs": 412}}))
    return events


def converse(*events) -> bytes:
    return b"".join(events)


def converse_text(*texts, stop="end_turn") -> bytes:
    return converse(C_START, *c_text(0, *texts), *c_stop(stop))


# =============================================================================================
# bedrock-invoke (InvokeModelWithResponseStream): each chunk the model's own event, base64
# =============================================================================================
INVOCATION_METRICS = {"inputTokenCount": 25, "outputTokenCount": 12, "invocationLatency": 640, "firstByteLatency": 210}


def invoke(*model_events) -> bytes:
    """Anthropic's events (the a_* builders) or chat chunks (dicts), each a chunk; Bedrock adds
    its invocation metrics to the last one."""
    events = [dict(e) for e in model_events]
    if events:
        events[-1]["amazon-bedrock-invocationMetrics"] = INVOCATION_METRICS
    return b"".join(es.chunk(e) for e in events)


def invoke_text(*texts, stop_reason="end_turn") -> bytes:
    return invoke(a_start(), *a_text(0, *texts), *a_end(stop_reason))


# =============================================================================================
# ollama (/api/chat, /api/generate): one JSON object per line
# =============================================================================================
O_MODEL = "llama3.2"


def o_chat(content="", done=False, done_reason=None, **message) -> bytes:
    obj = {"model": O_MODEL, "created_at": "2026-12-01T10:00:00.000000Z",
           "message": {"role": "assistant", "content": content, **message}, "done": done}  # fmt: skip
    if done_reason is not None:
        obj["done_reason"] = done_reason
    if done:
        obj.update(total_duration=4935886791, eval_count=12, eval_duration=4210000000)
    return _json(obj) + b"\n"


def o_generate(response="", done=False, done_reason=None, **extra) -> bytes:
    obj = {"model": O_MODEL, "created_at": "2026-12-01T10:00:00.000000Z", "response": response, "done": done, **extra}
    if done_reason is not None:
        obj["done_reason"] = done_reason
    return _json(obj) + b"\n"


def ollama_text(*pieces, done_reason="stop") -> bytes:
    return b"".join(o_chat(p) for p in pieces) + o_chat(done=True, done_reason=done_reason)


COMPLETE_STREAMS = {
    "chat": chat_text("Hello", " there!", usage=True),
    "responses": responses_text("po", "ng"),
    "anthropic": anthropic_text("Hello", " there!"),
    "gemini": gemini_text("The", " capital", " is Paris."),
    "bedrock-converse": converse_text("Hello", " there!"),
    "bedrock-invoke": invoke_text("Hello", " there!"),
    "ollama": ollama_text("Hello", " there!"),
}


# Pieces that several tests put into streams: providers' error events, a cut chunk, models.
OPENAI_ERROR = (
    b'data: {"error":{"message":"The server had an error while processing your request.",'
    b'"type":"server_error","param":null,"code":null}}\n\n'
)
GROQ_ERROR = (
    b'event: error\ndata: {"error":{"message":"Tool call validation failed","type":"invalid_request_error",'
    b'"code":"tool_use_failed","status_code":400}}\n\n'
)
GEMINI_DATA_ERROR = (
    b'data: {"error": {"code": 503,"message": "The model is overloaded.","status": "UNAVAILABLE"}}\r\n\r\n'
)
CUT_CHAT_CHUNK = (  # a chunk whose JSON was cut short, but whose event was still terminated
    b'data: {"id":"chatcmpl-BRq8xY2mT4kLz9wQe","object":"chat.completion.chunk",'
    b'"choices":[{"index":0,"delta":{"content":"Hel\n\n'
)
QUOTA = "You exceeded your current quota."
SAFETY_RATINGS = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
DSR = "deepseek-reasoner"
MAGISTRAL = "magistral-medium-latest"


def gemini_array(*chunks: dict, compact: bool = False) -> bytes:
    """streamGenerateContent without alt=sse: one JSON array, each chunk pretty-printed, and
    "\\n,\\r\\n" between them (compact: one line, as a proxy that re-serializes it sends it)."""
    if compact:
        return json.dumps(list(chunks), separators=(",", ":")).encode()
    return b"[" + b"\n,\r\n".join(json.dumps(c, indent=2).encode() for c in chunks) + b"\n]"


def g_object(*candidates, **top) -> dict:
    return {"candidates": list(candidates), **top, "modelVersion": G_MODEL}

"""How fast fastsse judges streams, next to the SSE decoders people already run.

One run generates a seeded corpus of varied streams per protocol (all of ``fastsse.PROTOCOLS``:
the same kind of content, text, reasoning, tool calls, unicode and escapes, in each protocol's
own words and framing), then times on the same bytes the format's reference decoder:

* SSE (chat, Responses, Anthropic, Gemini): the openai SDK's ``SSEDecoder`` + ``json.loads`` per
  event (what ``Stream.__stream__`` does, minus building the pydantic models, so the real SDK is
  slower than this baseline); and beside it httpx-sse's decoders + ``json.loads``, and msgspec
  decoding each ``data:`` line into a Struct that declares only the fields a verdict needs;
* AWS event streams (Bedrock): botocore's ``EventStreamBuffer`` (what boto3 and anthropic's
  Bedrock client read with) + ``json.loads`` per frame, and for InvokeModel the chunk's base64
  decoded and its JSON loaded too;
* NDJSON (Ollama): ``json.loads`` per line, bytes split in C; and beside it the ollama client's
  own loop (httpx's ``iter_lines`` + ``json.loads``), which splits in Python but runs faster
  (``json.loads`` of text skips detecting the encoding of bytes);

then fastsse (``Scanner.feed`` over 64 KiB chunks + ``close()``, and ``scan(stream)``), and a
bare newline scan: ``bytes.count(b"\\n")``, the yardstick of a pass that looks at every byte
once, and a ``for line in splitlines()`` loop.

Every stream is judged on its own, as the product does.  A last section (long_line_memory.py)
measures the memory a Scanner holds while a 200 MiB line that never ends is fed to it.

    python bench/bench_scanner.py            # 32 MB per protocol, best of 3 samples of 0.5 s
    python bench/bench_scanner.py --quick    # 1 MB per protocol: a smoke run
    python bench/bench_scanner.py --protocol ollama --protocol bedrock-invoke
"""

from __future__ import annotations

import argparse
import base64
import codecs
import datetime
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

# Benchmark the checkout this file lives in (with its in-place build, if any), not whatever
# fastsse an environment may have installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgspec  # noqa: E402
from botocore.eventstream import EventStreamBuffer  # noqa: E402
from httpx._decoders import LineDecoder as HttpxLineDecoder  # noqa: E402
from httpx._decoders import TextDecoder as HttpxTextDecoder  # noqa: E402
from httpx_sse._decoders import SSEDecoder as HttpxSseDecoder  # noqa: E402
from httpx_sse._decoders import SSELineDecoder as HttpxSseLineDecoder  # noqa: E402
from openai._streaming import SSEDecoder as OpenAISSEDecoder  # noqa: E402

import fastsse  # noqa: E402
from fastsse._protocols import FRAMINGS  # noqa: E402
from loadtests.wire import build_corpus  # noqa: E402

PROTOCOLS = fastsse.PROTOCOLS
CHUNK_BYTES = 64 * 1024  # what an HTTP client typically hands over per read
MB = 1_000_000

# Targets for the compiled scanner (the pure-Python twin is expected to miss them).
TARGET_REFERENCE_SPEEDUP = 100.0  # fastsse at least 100x its format's reference decoder, every dialect
TARGET_BARE_SLOWDOWN = 4.0  # fastsse at most 4x the time of the bare Python line loop (line framings)


def split_chunks(stream: bytes) -> list[bytes]:
    return [stream[i : i + CHUNK_BYTES] for i in range(0, len(stream), CHUNK_BYTES)]


# =============================================================================================
# Contenders.  Each decodes or judges every stream separately and returns how many events it
# saw, to show that they all did the same work.  ``corpus`` is a list of (stream, chunks).


def openai_sdk(corpus, protocol: str) -> int:
    """openai.Stream.__stream__: SSEDecoder.iter_bytes over the body, [DONE] ends, json per event.

    The SDK then raises on an "error" key and builds a pydantic model per event; we keep the
    error check and skip the model, so this is faster than the SDK really is.
    """
    events = 0
    for _stream, chunks in corpus:
        for sse_event in OpenAISSEDecoder().iter_bytes(iter(chunks)):
            events += 1
            if sse_event.data.startswith("[DONE]"):
                break
            data = sse_event.json()
            if isinstance(data, dict) and data.get("error"):
                raise RuntimeError("an error event in a generated stream")
    return events


def httpx_sse_events(chunks):
    """httpx_sse.EventSource.iter_sse without the HTTP response around it.

    The body is decoded to text as httpx's Response.iter_text does (an incremental UTF-8
    codec), SSELineDecoder splits lines, SSEDecoder builds events.
    """
    text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = HttpxSseLineDecoder()
    decoder = HttpxSseDecoder()
    for chunk in chunks:
        text = text_decoder.decode(chunk)
        for line in lines.decode(text) if text else ():
            sse_event = decoder.decode(line.rstrip("\n"))
            if sse_event is not None:
                yield sse_event
    for line in lines.decode(text_decoder.decode(b"", True)) + lines.flush():
        sse_event = decoder.decode(line.rstrip("\n"))
        if sse_event is not None:
            yield sse_event


def httpx_sse(corpus, protocol: str) -> int:
    """httpx-sse leaves [DONE] to its caller: stop there and json each event, as the SDK does."""
    events = 0
    for _stream, chunks in corpus:
        for sse_event in httpx_sse_events(chunks):
            events += 1
            if sse_event.data.startswith("[DONE]"):
                break
            sse_event.json()
    return events


# --- msgspec: Structs that declare only what a verdict needs; msgspec skips every other field.


class ApiError(msgspec.Struct):
    code: str | int | None = None
    type: str | None = None


class ChatFunction(msgspec.Struct):
    arguments: str | None = None


class ChatToolCall(msgspec.Struct):
    index: int = 0
    id: str | None = None
    function: ChatFunction | None = None


class ChatDelta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    refusal: str | None = None
    tool_calls: list[ChatToolCall] | None = None


class ChatChoice(msgspec.Struct):
    index: int = 0
    delta: ChatDelta | None = None
    finish_reason: str | None = None


class ChatChunk(msgspec.Struct):
    choices: list[ChatChoice] = []
    error: ApiError | None = None


class ResponsesItem(msgspec.Struct):
    type: str | None = None


class IncompleteDetails(msgspec.Struct):
    reason: str | None = None


class ResponsesResponse(msgspec.Struct):
    status: str | None = None
    error: ApiError | None = None
    incomplete_details: IncompleteDetails | None = None


class ResponsesEvent(msgspec.Struct):
    type: str = ""
    sequence_number: int | None = None
    delta: str | None = None
    item: ResponsesItem | None = None
    arguments: str | None = None
    response: ResponsesResponse | None = None
    error: ApiError | None = None


class AnthropicDelta(msgspec.Struct):
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class AnthropicBlock(msgspec.Struct):
    type: str | None = None


class AnthropicEvent(msgspec.Struct):
    type: str = ""
    index: int | None = None
    delta: AnthropicDelta | None = None
    content_block: AnthropicBlock | None = None
    error: ApiError | None = None


MSGSPEC_DECODERS = {
    "chat": msgspec.json.Decoder(ChatChunk),
    "responses": msgspec.json.Decoder(ResponsesEvent),
    "anthropic": msgspec.json.Decoder(AnthropicEvent),
}


def msgspec_partial(corpus, protocol: str) -> int:
    """A hand-rolled splitter (LF only, one data line per event: true of this corpus, not of
    SSE in general), then one typed msgspec decode per data line."""
    decode = MSGSPEC_DECODERS[protocol].decode
    events = 0
    for _stream, chunks in corpus:
        tail = b""
        for chunk in chunks:
            lines = (tail + chunk if tail else chunk).split(b"\n")
            tail = lines.pop()
            for line in lines:
                if not line.startswith(b"data:"):
                    continue
                events += 1
                if line.startswith(b"data: [DONE]"):
                    break
                decode(line[5:])  # JSON allows the leading space
    return events


def fastsse_feed(corpus, protocol: str, verdicts: list | None = None) -> int:
    """The product's path: a Scanner per stream, fed as the body arrives, closed at the end."""
    events = 0
    for _stream, chunks in corpus:
        scanner = fastsse.Scanner(protocol)
        for chunk in chunks:
            scanner.feed(chunk)
        verdict = scanner.close()
        events += verdict.events
        if verdicts is not None:
            verdicts.append(verdict)
    return events


def fastsse_scan(corpus, protocol: str, verdicts: list | None = None) -> int:
    events = 0
    for stream, _chunks in corpus:
        verdict = fastsse.scan(stream, protocol)
        events += verdict.events
        if verdicts is not None:
            verdicts.append(verdict)
    return events


def botocore_eventstream(corpus, protocol: str) -> int:
    """botocore's EventStreamBuffer (both CRCs checked) + json.loads per frame, as boto3 reads a
    Bedrock stream; an InvokeModel chunk's bytes are base64, the model's own JSON event."""
    events = 0
    invoke = protocol == "bedrock-invoke"
    for _stream, chunks in corpus:
        buffer = EventStreamBuffer()
        for chunk in chunks:
            buffer.add_data(chunk)
            for message in buffer:
                events += 1
                data = json.loads(message.payload)
                if invoke:
                    json.loads(base64.b64decode(data["bytes"]))
    return events


def ndjson_lines(corpus, protocol: str) -> int:
    """json.loads per line, carried across chunks, the lines split in C and loaded as bytes
    (the ollama client's own loop, ollama_client, loads text, which is faster)."""
    events = 0
    for _stream, chunks in corpus:
        tail = b""
        for chunk in chunks:
            lines = (tail + chunk if tail else chunk).split(b"\n")
            tail = lines.pop()
            for line in lines:
                if line.strip():
                    events += 1
                    json.loads(line)
        if tail.strip():
            events += 1
            json.loads(tail)
    return events


def ollama_client(corpus, protocol: str) -> int:
    """The ollama client's own loop (ollama 0.6, ``Client._request``): httpx's ``iter_lines``,
    which decodes each chunk to text and splits it (``TextDecoder``, ``LineDecoder``), then
    ``json.loads`` per line and a look for an "error" key; minus building the pydantic model per
    line, so the real client is slower than this."""
    events = 0
    for _stream, chunks in corpus:
        for line in _iter_lines(chunks):
            events += 1
            if json.loads(line).get("error"):
                raise ValueError(line)
    return events


def _iter_lines(chunks):
    """httpx's ``Response.iter_lines`` over these chunks, as a generator, as it is."""
    text, lines = HttpxTextDecoder(encoding="utf-8"), HttpxLineDecoder()
    for chunk in chunks:
        yield from lines.decode(text.decode(chunk))
    yield from lines.decode(text.flush())
    yield from lines.flush()


def bare_count(corpus, protocol: str) -> int:
    """The floor: C counts the newlines and creates nothing."""
    return sum(stream.count(b"\n") for stream, _chunks in corpus)


def bare_line_loop(corpus, protocol: str) -> int:
    """The simplest Python line iteration: one bytes object and one loop turn per line."""
    lines = 0
    for stream, _chunks in corpus:
        for _line in stream.splitlines():
            lines += 1
    return lines


# Each framing's reference decoder (the figure every speed-up is taken against) and the
# others it is shown beside.
REFERENCES = {
    "sse": (("openai SDK SSEDecoder + json.loads", openai_sdk),),
    "eventstream": (("botocore EventStreamBuffer + json.loads", botocore_eventstream),),
    "ndjson": (("json.loads per line", ndjson_lines),),
}
ALSO = {
    "sse": (("httpx-sse SSEDecoder + json.loads", httpx_sse), ("msgspec Struct decode (data lines)", msgspec_partial)),
    "eventstream": (),
    "ndjson": (("ollama client: iter_lines + json.loads", ollama_client),),
}
FASTSSE_AND_BARE = (
    ("fastsse Scanner.feed 64 KiB + close", fastsse_feed),
    ("fastsse scan(stream)", fastsse_scan),
    ("bare: bytes.count(b'\\n')", bare_count),
    ("bare: for line in splitlines()", bare_line_loop),
)


def contenders(protocol: str) -> tuple:
    """(name, function) of everything timed for this protocol; the first is its reference."""
    framing = FRAMINGS[protocol]
    also = tuple(c for c in ALSO[framing] if c[1] is not msgspec_partial or protocol in MSGSPEC_DECODERS)
    return REFERENCES[framing] + also + FASTSSE_AND_BARE


# =============================================================================================
# Timing and reports


# Each timed sample of a contender spans at least this long: as many runs over the corpus as
# that takes (one for the reference decoders, dozens for fastsse), their mean the sample.  On a
# machine whose speed moves from one second to the next (a shared VM), the best of a few runs of
# 10 ms would pick fastsse's luckiest instants against the references' average over seconds,
# and flatter the ratio; samples of the same length are slowed alike.
SAMPLE_SECONDS = 0.5


def time_once(contender, corpus, protocol: str, runs: int = 1) -> tuple[float, int]:
    """Wall time of one run over the corpus, the mean of ``runs`` in a row; the collector is off
    while timing, as timeit does."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(runs):
            seen = contender(corpus, protocol)
        return (time.perf_counter() - start) / runs, seen
    finally:
        gc.enable()


def best_times(corpus, protocol: str, repeat: int) -> tuple[dict, dict]:
    """Best of ``repeat`` samples per contender, each of SAMPLE_SECONDS at least, taking turns
    so that a burst of load from elsewhere on the machine slows every contender alike rather
    than one."""
    seconds = {contender: math.inf for _name, contender in contenders(protocol)}
    seen, runs = {}, {}
    for _name, contender in contenders(protocol):  # how many runs make a sample
        elapsed, seen[contender] = time_once(contender, corpus, protocol)
        runs[contender] = max(1, math.ceil(SAMPLE_SECONDS / elapsed))
    for _ in range(repeat):
        for _name, contender in contenders(protocol):
            elapsed, seen[contender] = time_once(contender, corpus, protocol, runs[contender])
            seconds[contender] = min(seconds[contender], elapsed)
    return seconds, seen


def corpus_summary(protocol: str, streams: list[bytes]) -> str:
    sizes = sorted(len(s) for s in streams)
    smallest, median, largest = sizes[0], sizes[len(sizes) // 2], sizes[-1]
    return (
        f"{protocol}: {sum(sizes) / MB:.1f} MB in {len(sizes)} streams "
        f"({smallest / 1000:.1f}-{largest / 1000:.1f} KB, median {median / 1000:.1f} KB)"
    )


def check_verdicts(corpus, feed_verdicts: list, scan_verdicts: list) -> int:
    """Every generated stream is complete; show what fastsse said about any it doubts."""
    doubted = [(i, v) for i, v in enumerate(feed_verdicts) if not v.complete]
    complete = len(feed_verdicts) - len(doubted)
    print(f"  verdicts: {complete}/{len(feed_verdicts)} complete, {len(doubted)} not complete")
    for i, verdict in doubted[:5]:
        size = len(corpus[i][0])
        print(f"    stream #{i} ({size} bytes): {verdict.category} - {verdict.message}")
        print(
            f"      finish_reason={verdict.finish_reason_raw} events={verdict.events} "
            f"residual={verdict.residual_bytes} malformed={verdict.malformed_events} "
            f"limit={verdict.limit}"
        )
    disagree = [i for i, (a, b) in enumerate(zip(feed_verdicts, scan_verdicts, strict=True)) if a != b]
    if disagree:
        first = disagree[0]
        print(f"  !! scan() and Scanner.feed() differ on {len(disagree)} streams, first #{first}")
    return len(doubted)


def bench_protocol(protocol: str, streams: list[bytes], repeat: int) -> dict:
    corpus = [(stream, split_chunks(stream)) for stream in streams]
    total = sum(len(s) for s in streams)
    print()
    print(corpus_summary(protocol, streams))
    print(f"  {'contender':<40} {'MB/s':>10} {'x ref':>9} {'events/lines':>13}")
    seconds, seen = best_times(corpus, protocol, repeat)
    reference = contenders(protocol)[0][1]
    for name, contender in contenders(protocol):
        rate = total / MB / seconds[contender]
        speedup = seconds[reference] / seconds[contender]
        print(f"  {name:<40} {rate:>10.1f} {speedup:>8.1f}x {seen[contender]:>13,}")

    feed_verdicts, scan_verdicts = [], []
    fastsse_feed(corpus, protocol, feed_verdicts)
    fastsse_scan(corpus, protocol, scan_verdicts)
    not_complete = check_verdicts(corpus, feed_verdicts, scan_verdicts)
    to_loop = seconds[fastsse_feed] / seconds[bare_line_loop]
    to_count = seconds[fastsse_feed] / seconds[bare_count]
    print(
        f"  fastsse feed takes {to_loop:.1f}x the time of the splitlines loop and {to_count:.2f}x that of bytes.count"
    )
    warm = min(warm_feed_seconds(corpus, protocol) for _ in range(repeat))
    print(
        f"  fastsse feed on bytes already in the cache: {total / MB / warm:.1f} MB/s, "
        f"{seconds[reference] / warm:.1f}x the reference decoder (not what the targets use)"
    )
    if protocol == "chat":
        apart = [(s, split_chunks(s)) for s in new_model_each(streams)]
        apart_total = sum(len(s) for s, _chunks in apart)
        apart_seconds = min(time_once(fastsse_feed, apart, protocol)[0] for _ in range(repeat))
        rate = apart_total / MB / apart_seconds
        print(
            f"  fastsse feed with a new model name in every stream: {rate:.1f} MB/s, "
            f"{rate / (total / MB / seconds[reference]):.1f}x the SDK decoder "
            f"(no event matches another stream's template; not what the targets use)"
        )
    return {"seconds": seconds, "reference": reference, "not_complete": not_complete}


def new_model_each(streams: list[bytes]) -> list[bytes]:
    """The same streams, each naming a model of its own.  The compiled scanner's templates (see
    bench/README.md) are made from one stream's events and match the next streams' events of the
    same shape; a model name is not a hole, so here no event matches: their worst case."""
    return [
        stream.replace(b'"model":"gpt-4o-2024-08-06"', b'"model":"model-%06d"' % i).replace(
            b'"model":"deepseek-reasoner"', b'"model":"reasoner-%06d"' % i
        )
        for i, stream in enumerate(streams)
    ]


def warm_feed_seconds(corpus, protocol: str) -> float:
    """fastsse_feed's time on each stream right after its bytes were read once (untimed), so
    that they come from the cache, as bytes a gateway has just received from a socket do.  The
    contenders above read the corpus from memory."""
    elapsed = 0.0
    clock = time.perf_counter
    gc.collect()
    gc.disable()
    try:
        for item in corpus:
            for chunk in item[1]:
                chunk.count(b"\n")
            start = clock()
            fastsse_feed((item,), protocol)
            elapsed += clock() - start
    finally:
        gc.enable()
    return elapsed


def report_targets(results: dict) -> None:
    print()
    if fastsse.IMPLEMENTATION == "cython":
        print("Targets")
    else:
        print("Targets (set for the cython build; this run used the python twin)")
    for protocol, result in results.items():
        seconds, reference = result["seconds"], result["reference"]
        speedup = seconds[reference] / seconds[fastsse_feed]
        met = "met" if speedup >= TARGET_REFERENCE_SPEEDUP else "NOT met"
        name = contenders(protocol)[0][0]
        print(
            f"  {protocol}: fastsse feed >= {TARGET_REFERENCE_SPEEDUP:.0f}x {name}: {speedup:.1f}x -> {met}; "
            f"its time is {seconds[fastsse_feed] / seconds[bare_count]:.2f}x that of bytes.count(b'\\n')"
        )
    for protocol, result in results.items():
        if FRAMINGS[protocol] == "eventstream":
            continue  # binary frames: a line loop is no yardstick for them
        seconds = result["seconds"]
        slowdown = seconds[fastsse_feed] / seconds[bare_line_loop]
        met = "met" if slowdown <= TARGET_BARE_SLOWDOWN else "NOT met"
        print(
            f"  {protocol}: fastsse feed time <= {TARGET_BARE_SLOWDOWN:.0f}x the bare splitlines "
            f"loop: {slowdown:.2f}x -> {met}"
        )
    doubted = {protocol: r["not_complete"] for protocol, r in results.items() if r["not_complete"]}
    print(f"  every generated stream judged complete: {'yes' if not doubted else f'NO {doubted}'}")


def report_truth() -> None:
    """The two figures every failure rule is held to, on both twins: finished turns of every
    shape judged anything but complete (false alarms, tests/fastsse/healthy.py), and those
    turns cut at an event boundary judged complete (misses)."""
    from fastsse import _scanner_py
    from tests.fastsse.healthy import STREAMS, cuts

    twins = {"python": _scanner_py}
    try:
        from fastsse import _scanner

        twins["cython"] = _scanner
    except ImportError:
        pass
    print()
    print(f"Truth ({len(STREAMS)} finished turns: text, tool calls, audio, images, approvals, compaction, ...)")
    for name, twin in twins.items():
        alarms = [s.id for s in STREAMS if twin.scan(s.data, s.protocol).category != "complete"]
        prefixes = [(s, prefix) for s in STREAMS for prefix in cuts(s)]
        misses = [s.id for s, prefix in prefixes if twin.scan(prefix, s.protocol).complete]
        print(
            f"  {name:<7} false alarms: {len(alarms)} of {len(STREAMS)}{' ' + str(alarms) if alarms else ''}; "
            f"misses: {len(misses)} of {len(prefixes)} cut turns{' ' + str(sorted(set(misses))) if misses else ''}"
        )


def bench_memory(total_mib: int) -> None:
    """Runs long_line_memory.py in a fresh interpreter that imports only fastsse, so neither
    the corpus nor the baselines' imports hide or inflate the peak."""
    print()
    print(
        f"Memory: one {total_mib} MiB line without a newline, fed in 64 KiB chunks to Scanner() "
        f"(default limits: max_line_bytes={fastsse.DEFAULT_MAX_LINE_BYTES // 2**20} MiB)"
    )
    probe = Path(__file__).with_name("long_line_memory.py")
    child = subprocess.run([sys.executable, str(probe), str(total_mib)], capture_output=True, text=True, check=False)
    if child.returncode != 0:
        print(f"  the measuring subprocess failed:\n{child.stderr}")
        return
    m = json.loads(child.stdout.strip().splitlines()[-1])
    print(
        f"  implementation {m['implementation']}; verdict {m['category']} (limit: {m['limit']}), "
        f"{m['bytes'] / 2**20:.0f} MiB counted in {m['seconds']:.2f} s"
    )
    if m["hwm_after_kib"] is not None and m["peak_was_reset"]:
        growth = (m["hwm_after_kib"] - m["rss_before_kib"]) / 1024
        print(f"  peak RSS growth: {growth:.1f} MiB (VmHWM after - VmRSS before; peak reset first)")
    else:
        # ru_maxrss cannot be reset and on Linux even keeps the parent's peak across exec, so
        # only growth past that old peak shows: a lower bound.
        growth = m["maxrss_growth_kib"] / 1024
        print(f"  peak RSS growth: >= {growth:.1f} MiB (ru_maxrss; VmHWM could not be reset)")
    print(f"  tracemalloc peak: {m['tracemalloc_peak_bytes'] / 2**20:.1f} MiB")


# =============================================================================================


def print_environment() -> None:
    import botocore
    import httpx
    import httpx_sse as httpx_sse_package
    import openai

    try:
        usable_cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable_cpus = os.cpu_count()
    now = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    python = f"{platform.python_version()} ({platform.python_implementation()})"
    print(f"date        {now}")
    print(f"python      {python} on {platform.platform()}")
    print(f"cpus        {os.cpu_count()} ({usable_cpus} usable), {platform.machine()}")
    print(
        f"fastsse     IMPLEMENTATION={fastsse.IMPLEMENTATION} ({fastsse.Scanner.__module__}) "
        f"from {Path(fastsse.__file__).parent}"
    )
    print(
        f"baselines   openai {openai.__version__}, httpx-sse {httpx_sse_package.__version__}, "
        f"msgspec {msgspec.__version__}, botocore {botocore.__version__}, httpx {httpx.__version__}"
    )


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="a 1 MB corpus per protocol: a smoke run")
    add("--size-mb", type=float, help="corpus per protocol in MB (default 32, --quick 1)")
    add("--repeat", type=int, default=3, help="timed samples per contender (3); the best counts")
    add("--seed", type=int, default=1, help="corpus seed (1)")
    add("--protocol", choices=PROTOCOLS, action="append", help="only this protocol (repeatable)")
    add("--memory-mib", type=int, default=200, help="the endless line, MiB (200; 0 skips)")
    args = parser.parse_args(argv)
    if args.size_mb is None:
        args.size_mb = 1.0 if args.quick else 32.0
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    print_environment()
    print(
        f"corpus      seed {args.seed}, {args.size_mb:g} MB per protocol, best of {args.repeat} samples of "
        f"{SAMPLE_SECONDS:g} s or more; "
        f"MB = 10^6 bytes; x ref = the format's reference decoder's time / contender time"
    )
    results = {}
    for protocol in args.protocol or PROTOCOLS:
        streams = build_corpus(protocol, int(args.size_mb * MB), args.seed)
        results[protocol] = bench_protocol(protocol, streams, args.repeat)
    report_targets(results)
    report_truth()
    if args.memory_mib:
        bench_memory(args.memory_mib)


if __name__ == "__main__":
    main()

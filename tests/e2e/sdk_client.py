"""A minimal streaming app on an official SDK, as its documentation shows one: print the text
as it comes, exit 0 when the SDK is done, 1 with the exception when it raises.  It checks
nothing the SDK does not check itself (no finish reason, no end event): the matrix measures
what the SDK tells a plain app.  Run by the SDK's own interpreter (see install.py):

    python sdk_client.py APP BASE_URL [--async] [--guard]

APP: openai-chat, openai-responses, anthropic, gemini, bedrock-converse and bedrock-invoke
(boto3), anthropic-bedrock (anthropic's Bedrock client), ollama.

``--guard`` adds the three lines of fastsse.guard to the app (the SDK's HTTP client gets the
guard's transport, with a reporter that sends what it judged to $FASTSSE_INGEST); ``--async``
runs the app on the SDK's async client.
"""

from __future__ import annotations

import asyncio
import os
import sys

PROMPT = "Say something long."
KEY = "sk-e2e-not-a-real-key"


def http_clients(guard) -> dict:
    """The SDK's HTTP client, guarded (the application's three lines), or the SDK's own."""
    if guard is None:
        return {}
    from fastsse.guard import AsyncTransport, Transport

    try:  # the openai, anthropic and google-genai SDKs are on httpx2
        import httpx2
    except ImportError:  # ollama is on httpx, and takes a transport
        import httpx

        return {
            "ollama": Transport(httpx.HTTPTransport(), reporter=guard),
            "aollama": AsyncTransport(httpx.AsyncHTTPTransport(), reporter=guard),
        }
    return {
        "sync": httpx2.Client(transport=Transport(httpx2.HTTPTransport(), reporter=guard), timeout=20),
        "async": httpx2.AsyncClient(transport=AsyncTransport(httpx2.AsyncHTTPTransport(), reporter=guard), timeout=20),
    }


def openai_chat(base_url: str, http: dict, mode: str):
    import openai

    if mode == "sync":
        client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=2, timeout=20, http_client=http.get("sync"))
        stream = client.chat.completions.create(
            model="mock-model", stream=True, messages=[{"role": "user", "content": PROMPT}]
        )
        for chunk in stream:
            for choice in chunk.choices:
                if choice.delta and choice.delta.content:
                    sys.stdout.write(choice.delta.content)
        return None

    async def run():
        client = openai.AsyncOpenAI(
            base_url=base_url, api_key=KEY, max_retries=2, timeout=20, http_client=http.get("async")
        )
        stream = await client.chat.completions.create(
            model="mock-model", stream=True, messages=[{"role": "user", "content": PROMPT}]
        )
        async for chunk in stream:
            for choice in chunk.choices:
                if choice.delta and choice.delta.content:
                    sys.stdout.write(choice.delta.content)

    return run()


def openai_responses(base_url: str, http: dict, mode: str):
    import openai

    if mode == "sync":
        client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=2, timeout=20, http_client=http.get("sync"))
        for event in client.responses.create(model="mock-model", input=PROMPT, stream=True):
            if event.type == "response.output_text.delta":
                sys.stdout.write(event.delta)
        return None

    async def run():
        client = openai.AsyncOpenAI(
            base_url=base_url, api_key=KEY, max_retries=2, timeout=20, http_client=http.get("async")
        )
        async for event in await client.responses.create(model="mock-model", input=PROMPT, stream=True):
            if event.type == "response.output_text.delta":
                sys.stdout.write(event.delta)

    return run()


def _anthropic_text(client, model: str, mode: str):
    """Print what anthropic's messages.stream gives, as its documentation shows (sync: now;
    async: the coroutine to run)."""
    messages = [{"role": "user", "content": PROMPT}]
    if mode == "sync":
        with client.messages.stream(model=model, max_tokens=1024, messages=messages) as stream:
            for text in stream.text_stream:
                sys.stdout.write(text)
        return None

    async def run():
        async with client.messages.stream(model=model, max_tokens=1024, messages=messages) as stream:
            async for text in stream.text_stream:
                sys.stdout.write(text)

    return run()


def anthropic_messages(base_url: str, http: dict, mode: str):
    import anthropic

    kind = anthropic.Anthropic if mode == "sync" else anthropic.AsyncAnthropic
    client = kind(base_url=base_url, api_key=KEY, max_retries=2, timeout=20, http_client=http.get(mode))
    return _anthropic_text(client, "mock-model", mode)


def gemini(base_url: str, http: dict, mode: str):
    from google import genai
    from google.genai import types

    own = {"httpx_client": http["sync"], "httpx_async_client": http["async"]} if http else {}
    client = genai.Client(
        api_key=KEY,
        http_options=types.HttpOptions(
            base_url=base_url,
            api_version="v1beta",
            timeout=20_000,
            retry_options=types.HttpRetryOptions(attempts=3),
            **own,
        ),
    )
    if mode == "sync":
        for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents=PROMPT):
            if chunk.text:
                sys.stdout.write(chunk.text)
        return None

    async def run():
        async for chunk in await client.aio.models.generate_content_stream(model="gemini-2.5-flash", contents=PROMPT):
            if chunk.text:
                sys.stdout.write(chunk.text)

    return run()


BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
AWS = {
    "region_name": "us-east-1",
    "aws_access_key_id": "AKIAE2ENOTAREALKEY",
    "aws_secret_access_key": "not-a-real-secret",
}


def _boto3(base_url: str):
    import boto3
    from botocore.config import Config

    config = Config(retries={"max_attempts": 3, "mode": "standard"}, read_timeout=20, connect_timeout=5)
    return boto3.client("bedrock-runtime", endpoint_url=base_url, config=config, **AWS)


def bedrock_converse(base_url: str, http: dict, mode: str):
    """boto3's converse_stream, as AWS's examples print it: each text delta as it comes."""
    response = _boto3(base_url).converse_stream(
        modelId=BEDROCK_MODEL, messages=[{"role": "user", "content": [{"text": PROMPT}]}]
    )
    for event in response["stream"]:
        text = event.get("contentBlockDelta", {}).get("delta", {}).get("text")
        if text:
            sys.stdout.write(text)


def bedrock_invoke(base_url: str, http: dict, mode: str):
    """boto3's invoke_model_with_response_stream with an Anthropic model's body, as AWS's
    examples read it: each chunk's JSON, the text of its text deltas."""
    import json

    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 1024,
            "messages": [{"role": "user", "content": PROMPT}]}  # fmt: skip
    response = _boto3(base_url).invoke_model_with_response_stream(modelId=BEDROCK_MODEL, body=json.dumps(body))
    for event in response["body"]:
        chunk = json.loads(event["chunk"]["bytes"])
        if chunk.get("type") == "content_block_delta" and chunk["delta"].get("type") == "text_delta":
            sys.stdout.write(chunk["delta"]["text"])


def anthropic_bedrock(base_url: str, http: dict, mode: str):
    import anthropic

    aws = {"aws_region": AWS["region_name"], "aws_access_key": AWS["aws_access_key_id"],
           "aws_secret_key": AWS["aws_secret_access_key"]}  # fmt: skip
    kind = anthropic.AnthropicBedrock if mode == "sync" else anthropic.AsyncAnthropicBedrock
    client = kind(base_url=base_url, max_retries=2, timeout=20, http_client=http.get(mode), **aws)
    return _anthropic_text(client, BEDROCK_MODEL, mode)


def ollama_chat(base_url: str, http: dict, mode: str):
    import ollama

    messages = [{"role": "user", "content": PROMPT}]
    if mode == "sync":
        client = ollama.Client(host=base_url, timeout=20, **({"transport": http["ollama"]} if http else {}))
        for part in client.chat(model="llama3.2", messages=messages, stream=True):
            sys.stdout.write(part.message.content or "")
        return None

    async def run():
        client = ollama.AsyncClient(host=base_url, timeout=20, **({"transport": http["aollama"]} if http else {}))
        async for part in await client.chat(model="llama3.2", messages=messages, stream=True):
            sys.stdout.write(part.message.content or "")

    return run()


APPS = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic_messages,
    "gemini": gemini,
    "bedrock-converse": bedrock_converse,
    "bedrock-invoke": bedrock_invoke,
    "anthropic-bedrock": anthropic_bedrock,
    "ollama": ollama_chat,
}


def reporter():
    """The guard's reporter, to the service the matrix runs ($FASTSSE_INGEST)."""
    from fastsse_service.reporter import Reporter

    return Reporter(
        os.environ["FASTSSE_INGEST"], os.environ["FASTSSE_INGEST_TOKEN"], spool_dir=os.environ["FASTSSE_SPOOL_DIR"]
    )


def told_by_guard(exc: BaseException) -> None:
    """Say the category of the guard's StreamFailed, if it is the exception or among its causes."""
    guard = sys.modules.get("fastsse.guard")
    failure = guard.stream_failure(exc) if guard is not None else None
    if failure is not None:
        print(f"fastsse.guard: {failure.category}", file=sys.stderr)


def main() -> int:
    app, base_url = sys.argv[1], sys.argv[2]
    mode = "async" if "--async" in sys.argv[3:] else "sync"
    guard = reporter() if "--guard" in sys.argv[3:] else None
    try:
        running = APPS[app](base_url, http_clients(guard), mode)
        if running is not None:
            asyncio.run(running)
    except Exception as exc:  # noqa: BLE001 - what the SDK raised is the finding
        sys.stdout.flush()
        print(f"\nERROR {type(exc).__module__}.{type(exc).__name__}: {exc}", file=sys.stderr)
        told_by_guard(exc)
        return 1
    finally:
        if guard is not None:
            guard.close()  # posts what the guard judged (else at exit)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

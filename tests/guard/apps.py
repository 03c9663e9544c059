"""Streaming apps on the official SDKs, each as its documentation shows one, with the guard in
the SDK's HTTP client: the three lines an application adds.  Each returns the text it read;
what the SDK raises, it raises."""

from __future__ import annotations

import httpx2

from fastsse.guard import AsyncTransport, Transport

KEY = "sk-guard-not-a-real-key"
PROMPT = "Say something long."


def guarded(**options) -> httpx2.Client:
    return httpx2.Client(transport=Transport(httpx2.HTTPTransport(), **options), timeout=20)


def aguarded(**options) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=AsyncTransport(httpx2.AsyncHTTPTransport(), **options), timeout=20)


def openai_chat(base: str, **options) -> str:
    import openai

    text = []
    with openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0, http_client=guarded(**options)) as client:
        stream = client.chat.completions.create(
            model="mock-model", stream=True, messages=[{"role": "user", "content": PROMPT}]
        )
        for chunk in stream:
            for choice in chunk.choices:
                if choice.delta and choice.delta.content:
                    text.append(choice.delta.content)
    return "".join(text)


async def openai_chat_async(base: str, **options) -> str:
    import openai

    text = []
    http = aguarded(**options)
    async with openai.AsyncOpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0, http_client=http) as client:
        stream = await client.chat.completions.create(
            model="mock-model", stream=True, messages=[{"role": "user", "content": PROMPT}]
        )
        async for chunk in stream:
            for choice in chunk.choices:
                if choice.delta and choice.delta.content:
                    text.append(choice.delta.content)
    return "".join(text)


def openai_responses(base: str, **options) -> str:
    import openai

    text = []
    with openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0, http_client=guarded(**options)) as client:
        for event in client.responses.create(model="mock-model", input=PROMPT, stream=True):
            if event.type == "response.output_text.delta":
                text.append(event.delta)
    return "".join(text)


async def openai_responses_async(base: str, **options) -> str:
    import openai

    text = []
    http = aguarded(**options)
    async with openai.AsyncOpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0, http_client=http) as client:
        async for event in await client.responses.create(model="mock-model", input=PROMPT, stream=True):
            if event.type == "response.output_text.delta":
                text.append(event.delta)
    return "".join(text)


def _anthropic_text(client, model: str) -> str:
    text = []
    with (
        client,
        client.messages.stream(model=model, max_tokens=1024, messages=[{"role": "user", "content": PROMPT}]) as stream,
    ):
        for piece in stream.text_stream:
            text.append(piece)
    return "".join(text)


async def _anthropic_text_async(client, model: str) -> str:
    text = []
    async with (
        client,
        client.messages.stream(model=model, max_tokens=1024, messages=[{"role": "user", "content": PROMPT}]) as stream,
    ):
        async for piece in stream.text_stream:
            text.append(piece)
    return "".join(text)


def anthropic_messages(base: str, **options) -> str:
    import anthropic

    client = anthropic.Anthropic(base_url=base, api_key=KEY, max_retries=0, http_client=guarded(**options))
    return _anthropic_text(client, "mock-model")


async def anthropic_messages_async(base: str, **options) -> str:
    import anthropic

    client = anthropic.AsyncAnthropic(base_url=base, api_key=KEY, max_retries=0, http_client=aguarded(**options))
    return await _anthropic_text_async(client, "mock-model")


def _gemini_client(base: str, **http):
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url=base, api_version="v1beta", retry_options=types.HttpRetryOptions(attempts=1), **http
    )
    return genai.Client(api_key=KEY, http_options=options)


def gemini(base: str, **options) -> str:
    text = []
    with guarded(**options) as http:
        client = _gemini_client(base, httpx_client=http)
        for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents=PROMPT):
            if chunk.text:
                text.append(chunk.text)
    return "".join(text)


async def gemini_async(base: str, **options) -> str:
    text = []
    async with aguarded(**options) as http:
        client = _gemini_client(base, httpx_async_client=http)
        async for chunk in await client.aio.models.generate_content_stream(model="gemini-2.5-flash", contents=PROMPT):
            if chunk.text:
                text.append(chunk.text)
    return "".join(text)


_REGION = {"aws_region": "us-east-1", "aws_access_key": "AKIAGUARDNOTAREALKEY", "aws_secret_key": "not-a-real-secret"}
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def anthropic_bedrock(base: str, **options) -> str:
    import anthropic

    client = anthropic.AnthropicBedrock(base_url=base, max_retries=0, http_client=guarded(**options), **_REGION)
    return _anthropic_text(client, BEDROCK_MODEL)


async def anthropic_bedrock_async(base: str, **options) -> str:
    import anthropic

    client = anthropic.AsyncAnthropicBedrock(base_url=base, max_retries=0, http_client=aguarded(**options), **_REGION)
    return await _anthropic_text_async(client, BEDROCK_MODEL)


def ollama_chat(base: str, **options) -> str:
    import httpx
    import ollama

    text = []
    with ollama.Client(host=base, transport=Transport(httpx.HTTPTransport(), **options), timeout=20) as client:
        for part in client.chat(model="llama3.2", messages=[{"role": "user", "content": PROMPT}], stream=True):
            text.append(part.message.content or "")
    return "".join(text)


async def ollama_chat_async(base: str, **options) -> str:
    import httpx
    import ollama

    text = []
    transport = AsyncTransport(httpx.AsyncHTTPTransport(), **options)
    async with ollama.AsyncClient(host=base, transport=transport, timeout=20) as client:
        messages = [{"role": "user", "content": PROMPT}]
        async for part in await client.chat(model="llama3.2", messages=messages, stream=True):
            text.append(part.message.content or "")
    return "".join(text)


# (name, protocol, sync app, async app)
APPS = (
    ("openai-chat", "chat", openai_chat, openai_chat_async),
    ("openai-responses", "responses", openai_responses, openai_responses_async),
    ("anthropic", "anthropic", anthropic_messages, anthropic_messages_async),
    ("google-genai", "gemini", gemini, gemini_async),
    ("anthropic-bedrock", "bedrock-invoke", anthropic_bedrock, anthropic_bedrock_async),
    ("ollama", "ollama", ollama_chat, ollama_chat_async),
)

"""A minimal streaming app on an official SDK, as its documentation shows one: print the text
as it comes, exit 0 when the SDK is done, 1 with the exception when it raises.  It checks
nothing the SDK does not check itself (no finish reason, no end event): the matrix measures
what the SDK tells a plain app.  Run by the SDK's own interpreter (see install.py):

    python sdk_client.py openai-chat|openai-responses|anthropic|gemini BASE_URL
"""

from __future__ import annotations

import sys

PROMPT = "Say something long."
KEY = "sk-e2e-not-a-real-key"


def openai_chat(base_url: str) -> None:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=2, timeout=20)
    stream = client.chat.completions.create(
        model="mock-model", stream=True, messages=[{"role": "user", "content": PROMPT}]
    )
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta and choice.delta.content:
                sys.stdout.write(choice.delta.content)


def openai_responses(base_url: str) -> None:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=2, timeout=20)
    for event in client.responses.create(model="mock-model", input=PROMPT, stream=True):
        if event.type == "response.output_text.delta":
            sys.stdout.write(event.delta)


def anthropic_messages(base_url: str) -> None:
    import anthropic

    client = anthropic.Anthropic(base_url=base_url, api_key=KEY, max_retries=2, timeout=20)
    with client.messages.stream(
        model="mock-model", max_tokens=1024, messages=[{"role": "user", "content": PROMPT}]
    ) as stream:
        for text in stream.text_stream:
            sys.stdout.write(text)


def gemini(base_url: str) -> None:
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key=KEY,
        http_options=types.HttpOptions(
            base_url=base_url, api_version="v1beta", timeout=20_000, retry_options=types.HttpRetryOptions(attempts=3)
        ),
    )
    for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents=PROMPT):
        if chunk.text:
            sys.stdout.write(chunk.text)


APPS = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic_messages,
    "gemini": gemini,
}


def main() -> int:
    app, base_url = sys.argv[1], sys.argv[2]
    try:
        APPS[app](base_url)
    except Exception as exc:  # noqa: BLE001 - what the SDK raised is the finding
        sys.stdout.flush()
        print(f"\nERROR {type(exc).__module__}.{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

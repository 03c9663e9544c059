"""A streaming app on LiteLLM, as its documentation shows one: print the text as it comes, exit 0
when LiteLLM is done, 1 with the exception when it raises.  Run by LiteLLM's own interpreter
(see install.py):

    python litellm_client.py library BASE_URL openai|gemini|anthropic|bedrock [--async] [--guard]
    python litellm_client.py proxy PROXY_URL MODEL

``library`` calls ``litellm.completion`` (or ``acompletion``) on the mock at BASE_URL;
``--guard`` first puts LiteLLM's upstream streams through fastsse.guard
(``fastsse_service.litellm_guard.install``), its reporter posting to $FASTSSE_INGEST.
``proxy`` is a plain openai SDK app asking the LiteLLM proxy at PROXY_URL for MODEL.
"""

from __future__ import annotations

import asyncio
import os
import sys

PROMPT = "Say something long."
KEY = "sk-e2e-not-a-real-key"


# Bedrock through a local endpoint: dummy keys, never AWS.
AWS = {
    "aws_access_key_id": "AKIDE2ENOTREAL",
    "aws_secret_access_key": "e2e-not-a-real-secret",
    "aws_region_name": "us-east-1",
}
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def litellm_params(base_url: str, provider: str) -> dict:
    """LiteLLM's parameters for a model of this provider on the mock at BASE_URL (the proxy's
    configuration takes the same: see tests/e2e/conftest.py)."""
    if provider == "gemini":
        return {"model": "gemini/gemini-2.5-flash", "api_base": base_url + "/v1beta"}
    if provider == "anthropic":
        return {"model": "anthropic/claude-sonnet-4-5-20250929", "api_base": base_url}
    if provider == "bedrock":
        return {"model": f"bedrock/converse/{BEDROCK_MODEL}", "api_base": base_url, **AWS}
    return {"model": "openai/mock-model", "api_base": base_url + "/v1"}


def library(base_url: str, provider: str, mode: str) -> None:
    import litellm

    call = litellm_params(base_url, provider)
    call.update(api_key=KEY, stream=True, num_retries=0, messages=[{"role": "user", "content": PROMPT}])
    if mode == "sync":
        for chunk in litellm.completion(**call):
            if chunk.choices and chunk.choices[0].delta.content:
                sys.stdout.write(chunk.choices[0].delta.content)
        return

    async def run():
        async for chunk in await litellm.acompletion(**call):
            if chunk.choices and chunk.choices[0].delta.content:
                sys.stdout.write(chunk.choices[0].delta.content)

    asyncio.run(run())


def through_proxy(proxy_url: str, model: str) -> None:
    import openai

    client = openai.OpenAI(base_url=proxy_url + "/v1", api_key=os.environ.get("LITELLM_KEY", KEY), max_retries=0)
    stream = client.chat.completions.create(model=model, stream=True, messages=[{"role": "user", "content": PROMPT}])
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta and choice.delta.content:
                sys.stdout.write(choice.delta.content)


def told_by_guard(exc: BaseException) -> None:
    """Say the category of the guard's StreamFailed, if it is the exception or among its causes."""
    guard = sys.modules.get("fastsse.guard")
    failure = guard.stream_failure(exc) if guard is not None else None
    if failure is not None:
        print(f"fastsse.guard: {failure.category}", file=sys.stderr)


def main() -> int:
    kind, url, what = sys.argv[1:4]
    flags = sys.argv[4:]
    reporter = None
    try:
        if kind == "proxy":
            through_proxy(url, what)
        else:
            if "--guard" in flags:
                from fastsse_service.litellm_guard import install
                from fastsse_service.reporter import Reporter

                reporter = Reporter(
                    os.environ["FASTSSE_INGEST"],
                    os.environ["FASTSSE_INGEST_TOKEN"],
                    spool_dir=os.environ["FASTSSE_SPOOL_DIR"],
                    tool="litellm",
                )
                install(reporter=reporter)
            library(url, what, "async" if "--async" in flags else "sync")
    except Exception as exc:  # noqa: BLE001 - what LiteLLM raised is the finding
        sys.stdout.flush()
        print(f"\nERROR {type(exc).__module__}.{type(exc).__name__}: {exc}", file=sys.stderr)
        told_by_guard(exc)
        return 1
    finally:
        if reporter is not None:
            reporter.close()
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

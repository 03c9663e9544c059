"""Per-protocol rules, as data.

Both scanner twins read these tables; adding a provider habit adds rows here, not branches in
the scanners.  Three kinds of table:

* ``JSON_PATHS`` - which JSON fields of an event matter and what the scanner records for each
  (an *action*).  One union table serves every protocol: the fields do not collide, and it lets
  ``protocol="auto"`` read the first events before it knows the protocol.
* ``EVENT_KINDS`` - for the protocols that name their events (``type``), what each event means.
* ``FINISH_REASONS`` - every finish/stop reason a protocol sends, normalized, with its outcome.

Facts and sources: ``shared/PROTOCOLS.md``.
"""

from __future__ import annotations

PROTOCOLS = ("chat", "responses", "anthropic", "gemini")

# ---------------------------------------------------------------------------------------------
# Actions: what the JSON scanner records when it meets a field (see JSON_PATHS).
A_TYPE = 1  # event type (Responses, Anthropic); captured string
A_OBJECT = 2  # chat "object" (chat.completion.chunk); captured string
A_MODEL = 3  # served model name; captured string
A_ERROR = 4  # an error object; any value but null/false means "error"
A_ERR_CODE = 5  # error.code (string or number)
A_ERR_TYPE = 6  # error.type
A_ERR_STATUS = 7  # error.status (Gemini)
A_FLAT_CODE = 8  # top-level "code" of a flat Responses error event
A_SEQ = 9  # Responses sequence_number
A_CHOICES = 10  # the chat choices array exists (protocol detection)
A_CHOICE = 11  # one choice/candidate (element begin/end)
A_CHOICE_INDEX = 12
A_FINISH = 13  # finish_reason / finishReason; captured string
A_TEXT = 14  # visible text: counts when the string is non-empty
A_REASONING = 15  # reasoning text: counts when non-empty
A_REFUSAL = 16  # refusal text: counts when non-empty
A_PART = 17  # one content part (element begin/end)
A_PART_TYPE = 18
A_PART_TEXT = 19
A_PART_THOUGHT = 20  # Gemini "thought": true marks a reasoning part
A_PART_TOOL = 21  # Gemini functionCall part (its name: streamed partialArgs repeat the part)
A_TOOL = 22  # one chat tool call fragment (element begin/end)
A_TOOL_INDEX = 23
A_TOOL_ID = 24  # id of a call: a new id at a known index starts a new call
A_TOOL_ARGS = 25  # argument fragment: unescaped, fed to the call's JSON validator
A_BLOCK_REASON = 26  # Gemini promptFeedback.blockReason
A_INCOMPLETE_REASON = 27  # Responses response.incomplete_details.reason
A_DELTA = 28  # Responses top-level "delta" string: non-empty counts
A_DELTA_TEXT = 29  # Anthropic delta.text
A_DELTA_THINKING = 30  # Anthropic delta.thinking
A_DELTA_JSON = 31  # Anthropic delta.partial_json: fed to the block's JSON validator
A_STOP_REASON = 32  # Anthropic delta.stop_reason
A_BLOCK_INDEX = 33  # Anthropic content block index
A_BLOCK_TYPE = 34  # Anthropic content_block.type
A_ITEM_TYPE = 35  # Responses item.type
A_ARGS = 36  # Responses complete "arguments" string of function_call_arguments.done
A_GEMINI = 37  # a Gemini-only container (protocol detection)
A_STATUS = 38  # Responses response.status (read on terminal events only)
A_STOP_DETAIL = 39  # Anthropic delta.stop_details.type
A_NATIVE_FINISH = 40  # OpenRouter choices[].native_finish_reason: the upstream's own word
A_FUNCTION_CALL = 41  # legacy OpenAI delta.function_call: one tool call fragment per choice

# Actions whose string value is captured whole (unescaped) for a JSON validator; every other
# captured string keeps at most CAPTURE_BYTES bytes: they are enum values, never payload.
FULL_CAPTURE_ACTIONS = frozenset({A_TOOL_ARGS, A_DELTA_JSON, A_ARGS})
# Actions whose string value is captured (bounded); the rest only note "non-empty".
SHORT_CAPTURE_ACTIONS = frozenset(
    {
        A_TYPE,
        A_OBJECT,
        A_MODEL,
        A_ERR_CODE,
        A_ERR_TYPE,
        A_ERR_STATUS,
        A_FLAT_CODE,
        A_FINISH,
        A_PART_TYPE,
        A_BLOCK_REASON,
        A_INCOMPLETE_REASON,
        A_STOP_REASON,
        A_BLOCK_TYPE,
        A_ITEM_TYPE,
        A_TOOL_ID,
        A_STATUS,
        A_STOP_DETAIL,
        A_NATIVE_FINISH,
    }
)
CAPTURE_BYTES = 64
# What a template (an event shape shared by the scanners of one Caches, see the compiled
# scanner's _caches.pxd) may keep of an event besides its keys: the values that name things
# (types, models, finish reasons, error codes, ids), which are never payload.  They are the
# bounded captures above; any other value makes the event no template.
TEMPLATE_MAY_KEEP = SHORT_CAPTURE_ACTIONS

# Path syntax: dotted keys; "[]" means "each element of this array".
JSON_PATHS = (
    # shared
    ("type", A_TYPE),
    ("model", A_MODEL),
    ("error", A_ERROR),
    ("error.code", A_ERR_CODE),
    ("error.type", A_ERR_TYPE),
    ("error.status", A_ERR_STATUS),
    # chat (OpenAI Chat Completions and compatible providers)
    ("object", A_OBJECT),
    ("choices", A_CHOICES),
    ("choices[]", A_CHOICE),
    ("choices[].index", A_CHOICE_INDEX),
    ("choices[].finish_reason", A_FINISH),
    ("choices[].native_finish_reason", A_NATIVE_FINISH),
    ("choices[].delta.content", A_TEXT),
    ("choices[].delta.content[]", A_PART),  # Mistral: content is a list of typed parts
    ("choices[].delta.content[].type", A_PART_TYPE),
    ("choices[].delta.content[].text", A_PART_TEXT),
    ("choices[].delta.reasoning_content", A_REASONING),  # DeepSeek, Z.ai
    ("choices[].delta.reasoning", A_REASONING),  # OpenRouter, Groq
    ("choices[].delta.refusal", A_REFUSAL),
    ("choices[].delta.tool_calls[]", A_TOOL),
    ("choices[].delta.tool_calls[].index", A_TOOL_INDEX),
    ("choices[].delta.tool_calls[].id", A_TOOL_ID),
    ("choices[].delta.tool_calls[].function.arguments", A_TOOL_ARGS),
    # legacy function calling (before tool_calls): one call per choice, named on its first
    # fragment; the name tells a new call from the one it continues, as an id does
    ("choices[].delta.function_call", A_FUNCTION_CALL),
    ("choices[].delta.function_call.name", A_TOOL_ID),
    ("choices[].delta.function_call.arguments", A_TOOL_ARGS),
    # responses (OpenAI Responses)
    ("code", A_FLAT_CODE),
    ("sequence_number", A_SEQ),
    ("delta", A_DELTA),
    ("arguments", A_ARGS),
    ("item.type", A_ITEM_TYPE),
    ("response.model", A_MODEL),
    ("response.error", A_ERROR),
    ("response.error.code", A_ERR_CODE),
    ("response.incomplete_details.reason", A_INCOMPLETE_REASON),
    ("response.status", A_STATUS),
    # anthropic (Messages)
    ("index", A_BLOCK_INDEX),
    ("message.model", A_MODEL),
    ("content_block.type", A_BLOCK_TYPE),
    ("delta.text", A_DELTA_TEXT),
    ("delta.thinking", A_DELTA_THINKING),
    ("delta.partial_json", A_DELTA_JSON),
    ("delta.stop_reason", A_STOP_REASON),
    ("delta.stop_details.type", A_STOP_DETAIL),
    # gemini (streamGenerateContent?alt=sse)
    ("modelVersion", A_MODEL),
    ("promptFeedback", A_GEMINI),
    ("promptFeedback.blockReason", A_BLOCK_REASON),
    ("usageMetadata", A_GEMINI),
    ("candidates", A_GEMINI),
    ("candidates[]", A_CHOICE),
    ("candidates[].index", A_CHOICE_INDEX),
    ("candidates[].finishReason", A_FINISH),
    ("candidates[].content.parts[]", A_PART),
    ("candidates[].content.parts[].text", A_PART_TEXT),
    ("candidates[].content.parts[].thought", A_PART_THOUGHT),
    ("candidates[].content.parts[].functionCall.name", A_PART_TOOL),  # not partialArgs
)


def compile_paths(
    paths: tuple[tuple[str, int], ...] = JSON_PATHS,
) -> list[tuple[int, dict[bytes, int], int]]:
    """Turn the path table into a tree of nodes the scanners walk while they read JSON.

    Returns a list of nodes; node 0 is the document root.  Each node is a tuple
    ``(action, children, element)``: ``children`` maps a key (bytes) to a node number,
    ``element`` is the node number for array elements or -1.
    """
    actions = [0]
    children: list[dict[bytes, int]] = [{}]
    element = [-1]

    def new_node() -> int:
        actions.append(0)
        children.append({})
        element.append(-1)
        return len(actions) - 1

    for path, action in paths:
        node = 0
        for part in path.split("."):
            key, _, rest = part.partition("[]")
            if key.encode() not in children[node]:
                children[node][key.encode()] = new_node()
            node = children[node][key.encode()]
            if part.endswith("[]"):
                if element[node] < 0:
                    element[node] = new_node()
                node = element[node]
        if actions[node]:
            raise ValueError(f"two actions for JSON path {path!r}")
        actions[node] = action
    return [(actions[i], children[i], element[i]) for i in range(len(actions))]


JSON_TREE = compile_paths()

# ---------------------------------------------------------------------------------------------
# Event kinds: for the protocols whose events carry a type, what each type means.
K_OTHER = 0
K_TEXT_DELTA = 1  # Responses output text delta
K_REFUSAL_DELTA = 2
K_REASONING_DELTA = 3
K_ITEM_ADDED = 4  # Responses output item added (reasoning item, tool call item)
K_ARGS_DONE = 5  # Responses: the whole arguments string of a function call
K_COMPLETED = 6  # terminal, normal
K_INCOMPLETE = 7  # terminal, cut (reason in incomplete_details)
K_FAILED = 8  # terminal, failed
K_ERROR = 9  # an error event
K_BLOCK_START = 10  # Anthropic content_block_start
K_BLOCK_DELTA = 11
K_MESSAGE_DELTA = 12  # Anthropic message_delta (carries stop_reason)
K_MESSAGE_STOP = 13  # Anthropic terminal
K_START = 14  # first event of a message/response

EVENT_KINDS = {
    "responses": {
        "response.created": K_START,
        "response.queued": K_START,
        "response.in_progress": K_START,
        "response.output_text.delta": K_TEXT_DELTA,
        "response.refusal.delta": K_REFUSAL_DELTA,
        "response.reasoning_summary_text.delta": K_REASONING_DELTA,
        "response.reasoning_text.delta": K_REASONING_DELTA,
        "response.output_item.added": K_ITEM_ADDED,
        "response.function_call_arguments.done": K_ARGS_DONE,
        "response.completed": K_COMPLETED,
        "response.incomplete": K_INCOMPLETE,
        "response.failed": K_FAILED,
        "error": K_ERROR,
    },
    "anthropic": {
        "message_start": K_START,
        "content_block_start": K_BLOCK_START,
        "content_block_delta": K_BLOCK_DELTA,
        "message_delta": K_MESSAGE_DELTA,
        "message_stop": K_MESSAGE_STOP,
        "error": K_ERROR,
    },
}

# The raw finish reason recorded for a Responses stream that ended response.completed (the API
# sends no reason for a normal end, only status "completed").
RESPONSES_COMPLETED = "completed"
# A terminal Responses event is judged by what it says, not only by its name: a reason in
# incomplete_details wins, then a status that is neither of these two (failed, cancelled, a
# status that is not terminal at all), which becomes the raw finish reason itself.  A
# response.completed whose status is "incomplete" but that gives no reason never said why.
RESPONSES_STATUS_INCOMPLETE = "incomplete"
RESPONSES_NAME_STATUSES = frozenset({RESPONSES_COMPLETED, RESPONSES_STATUS_INCOMPLETE})
# Anthropic: a message_delta's stop_details.type that wins over its stop_reason (a refusal
# reported beside stop_reason "end_turn" is still a refusal).
ANTHROPIC_STOP_DETAILS_WIN = frozenset({"refusal"})

# Responses output item types that count as reasoning or as a tool call.
RESPONSES_REASONING_ITEMS = frozenset({"reasoning"})
RESPONSES_TOOL_ITEM_SUFFIX = "_call"  # function_call, web_search_call, mcp_call, ...
# Anthropic content block types.
ANTHROPIC_REASONING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
ANTHROPIC_TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
# Anthropic blocks whose input arrives as input_json_delta and must parse at the end.
ANTHROPIC_JSON_INPUT_BLOCKS = ANTHROPIC_TOOL_BLOCKS
# auto: an event type that names its protocol.
DETECT_TYPE_PREFIXES = (("response.", "responses"),)
DETECT_TYPES = {
    "message_start": "anthropic",
    "content_block_start": "anthropic",
    "content_block_delta": "anthropic",
    "content_block_stop": "anthropic",
    "message_delta": "anthropic",
    "message_stop": "anthropic",
}
CHAT_OBJECT = "chat.completion.chunk"
DONE_SENTINEL = b"[DONE]"  # ends a chat stream; OpenRouter also appends it to Responses streams
# Mistral content part types that are reasoning.
REASONING_PART_TYPES = frozenset({"thinking"})
# The tool index of a legacy function_call fragment: apart from every tool_calls index (which
# are never negative), and from -1, "no index sent".
LEGACY_CALL_INDEX = -2

# ---------------------------------------------------------------------------------------------
# Finish reasons.  Outcomes:
O_OK = "ok"
O_LENGTH = "length"  # cut by a token limit
O_FILTER = "filter"  # a safety system or refusal ended it
O_PAUSE = "pause"  # a complete stream of a turn the client must continue
O_TOOL_MALFORMED = "tool_malformed"
O_ABNORMAL = "abnormal"  # the provider stopped for a reason that is not success

# How bad an outcome is when two words for one finish disagree (choices of n > 1, or a native
# finish reason beside a normalized one): the lower, the worse.
OUTCOME_RANK = {O_ABNORMAL: 0, O_LENGTH: 1, O_FILTER: 2, O_TOOL_MALFORMED: 3, O_PAUSE: 4, O_OK: 5}

# The chat protocol's finish reasons: every value the OpenAI-compatible providers and servers
# send (see CHAT_PROVIDERS for who sends which, and where that is documented).
CHAT_FINISH_REASONS = {
    "stop": ("stop", O_OK),
    "length": ("length", O_LENGTH),
    "tool_calls": ("tool_calls", O_OK),
    "function_call": ("tool_calls", O_OK),  # deprecated OpenAI value: legacy function calling
    "content_filter": ("content_filter", O_FILTER),
    "model_length": ("length", O_LENGTH),  # Mistral: the model's context window filled up
    "eos": ("stop", O_OK),  # Together: end-of-sequence token
    "eos_token": ("stop", O_OK),  # TGI before 2024-08, Mistral's first client
    "stop_sequence": ("stop", O_OK),  # TGI: a stop sequence matched
    "guardrail_intervened": ("content_filter", O_FILTER),  # Bedrock guardrails, via LiteLLM
    "malformed_function_call": ("malformed_tool_call", O_TOOL_MALFORMED),  # Gemini via LiteLLM
    # The server gave up on the request: transient, a retry may well succeed.
    "error": ("error", O_ABNORMAL),  # Mistral, OpenRouter (with an error object)
    "abort": ("error", O_ABNORMAL),  # vLLM, SGLang: the request was aborted
    "insufficient_system_resource": ("error", O_ABNORMAL),  # DeepSeek: server overloaded
    "connection_closed": ("error", O_ABNORMAL),  # Ollama: its runner's connection closed
    # Not success, not an error: the answer did not end the way a finished answer ends.
    "repetition": ("other", O_ABNORMAL),  # vLLM: repetition detection cut a looping answer
    "finish_reason_unspecified": ("other", O_ABNORMAL),  # Gemini's unset value, via LiteLLM
}

# (provider or server, the finish reasons it sends in a streamed chat completion, the source
# that says so).  docs/verdict/protocols.md shows this table; tests hold every value to CHAT_FINISH_REASONS.
CHAT_PROVIDERS = (
    (
        "OpenAI",
        ("stop", "length", "tool_calls", "content_filter", "function_call"),
        "openai/openai-python `src/openai/types/chat/chat_completion_chunk.py`",
    ),
    (
        "Azure OpenAI",
        ("stop", "length", "tool_calls", "content_filter", "function_call"),
        "the Azure OpenAI inference spec, as generated in SAP/ai-sdk-js "
        "`packages/foundation-models/src/azure-openai/client/inference/schema/`; "
        "learn.microsoft.com Azure OpenAI content streaming",
    ),
    (
        "Mistral",
        ("stop", "length", "model_length", "error", "tool_calls", "eos_token"),
        "mistralai/client-python `src/mistralai/models/chatcompletionchoice.py` "
        "(`eos_token`: the v0 client's `models/chat_completion.py`)",
    ),
    (
        "DeepSeek",
        ("stop", "length", "content_filter", "tool_calls", "insufficient_system_resource"),
        "api-docs.deepseek.com/api/create-chat-completion",
    ),
    (
        "Groq",
        ("stop", "length", "tool_calls", "content_filter", "function_call"),
        "groq/groq-python `src/groq/types/chat/chat_completion_chunk.py`",
    ),
    (
        "OpenRouter",
        ("stop", "length", "tool_calls", "content_filter", "error"),
        "openrouter.ai/docs/api-reference/streaming; OpenRouterTeam/typescript-sdk "
        "`src/models/chatfinishreasonenum.ts`; `native_finish_reason` carries the upstream's value",
    ),
    (
        "Together",
        ("stop", "eos", "length", "tool_calls", "function_call"),
        "togethercomputer/together-py `src/together/types/chat/chat_completion_chunk.py`",
    ),
    (
        "Fireworks",
        ("stop", "length", "function_call", "tool_calls"),
        "fw-ai-external/python-sdk `src/fireworks/types/chat/chat_completion_chunk.py`",
    ),
    (
        "xAI",
        ("stop", "length", "tool_calls"),
        "`stop` in captured streams (charmbracelet/fantasy `providertests/testdata/TestXAICommon/`); "
        "xAI documents no other REST values, `length` and `tool_calls` as OpenAI's",
    ),
    (
        "vLLM",
        ("stop", "length", "abort", "tool_calls", "repetition"),
        "vllm-project/vllm `vllm/v1/engine/__init__.py` (`FINISH_REASON_STRINGS`), "
        "`vllm/entrypoints/openai/serving_chat.py` (`tool_calls`); its `error` is sent as an "
        "error event instead (PR #26813)",
    ),
    (
        "SGLang",
        ("stop", "length", "tool_calls", "content_filter", "function_call", "abort"),
        "sgl-project/sglang `python/sglang/srt/entrypoints/openai/protocol.py`",
    ),
    (
        "TGI",
        ("stop", "length", "eos_token", "stop_sequence"),
        "huggingface/text-generation-inference `router/src/lib.rs` (`FinishReason`); `eos_token` "
        'became `stop` in PR #2344 (2024-08); non-final chunks may carry `""`, read as null',
    ),
    (
        "Ollama",
        ("stop", "length", "tool_calls", "connection_closed"),
        "ollama/ollama `openai/openai.go` (`ToChunk`), `llm` `DoneReason`; a closed runner sends "
        "`connection_closed` or, in other versions, no finish reason at all",
    ),
    (
        "LM Studio",
        ("stop", "length", "tool_calls"),
        "lmstudio-ai/docs `1_developer/3_openai-compat/tools.md` (`tool_calls`); `stop` and "
        "`length` as the llama.cpp engine it runs",
    ),
    (
        "llama.cpp server",
        ("stop", "length", "tool_calls"),
        "ggml-org/llama.cpp `tools/server/server-task.cpp` (`to_json_oaicompat_chat`)",
    ),
    (
        "LiteLLM proxy",
        (
            "stop",
            "length",
            "tool_calls",
            "content_filter",
            "function_call",
            "guardrail_intervened",
            "eos",
            "finish_reason_unspecified",
            "malformed_function_call",
        ),
        "BerriAI/litellm `litellm/litellm_core_utils/core_helpers.py` (`map_finish_reason`); the "
        "last four passed through before PR #22138 (2026-02)",
    ),
)

# raw value -> (normalized, outcome).  A value missing from its table is ("other", O_ABNORMAL):
# "complete" is never assumed for a reason we do not know.
FINISH_REASONS = {
    "chat": CHAT_FINISH_REASONS,  # and the values gateways forward, added below
    "responses": {
        RESPONSES_COMPLETED: ("stop", O_OK),
        "max_output_tokens": ("length", O_LENGTH),
        "content_filter": ("content_filter", O_FILTER),
        "steered": ("pause", O_PAUSE),  # ended by the client's own steering
        # response.status values a terminal event may carry instead of a reason
        "failed": ("error", O_ABNORMAL),
        "cancelled": ("error", O_ABNORMAL),
    },
    "anthropic": {
        "end_turn": ("stop", O_OK),
        "stop_sequence": ("stop", O_OK),
        "tool_use": ("tool_calls", O_OK),
        "max_tokens": ("length", O_LENGTH),
        "model_context_window_exceeded": ("length", O_LENGTH),
        "refusal": ("content_filter", O_FILTER),
        "pause_turn": ("pause", O_PAUSE),
        "compaction": ("pause", O_PAUSE),
    },
    "gemini": {
        "STOP": ("stop", O_OK),
        "MAX_TOKENS": ("length", O_LENGTH),
        "SAFETY": ("content_filter", O_FILTER),
        "RECITATION": ("content_filter", O_FILTER),
        "LANGUAGE": ("content_filter", O_FILTER),
        "BLOCKLIST": ("content_filter", O_FILTER),
        "PROHIBITED_CONTENT": ("content_filter", O_FILTER),
        "SPII": ("content_filter", O_FILTER),
        "IMAGE_SAFETY": ("content_filter", O_FILTER),
        "IMAGE_PROHIBITED_CONTENT": ("content_filter", O_FILTER),
        "IMAGE_RECITATION": ("content_filter", O_FILTER),
        "MALFORMED_FUNCTION_CALL": ("malformed_tool_call", O_TOOL_MALFORMED),
        "UNEXPECTED_TOOL_CALL": ("malformed_tool_call", O_TOOL_MALFORMED),
        "TOO_MANY_TOOL_CALLS": ("malformed_tool_call", O_TOOL_MALFORMED),
        "OTHER": ("other", O_ABNORMAL),
        "FINISH_REASON_UNSPECIFIED": ("other", O_ABNORMAL),
        "NO_IMAGE": ("other", O_ABNORMAL),
        "IMAGE_OTHER": ("other", O_ABNORMAL),
    },
}
# Gateways forward the other protocols' values into chat streams: OpenRouter as
# native_finish_reason ("completed" from an upstream on the Responses API, "end_turn", "STOP"),
# older LiteLLM releases as finish_reason itself.  They mean in chat what they mean in their own
# protocol (no value is spelled the same with another meaning).
CHAT_FORWARDED_PROTOCOLS = ("responses", "anthropic", "gemini")
FINISH_REASONS["chat"] = {
    **{raw: meaning for protocol in CHAT_FORWARDED_PROTOCOLS for raw, meaning in FINISH_REASONS[protocol].items()},
    **CHAT_FINISH_REASONS,
}
assert all(
    FINISH_REASONS["chat"][raw] == meaning
    for protocol in CHAT_FORWARDED_PROTOCOLS
    for raw, meaning in FINISH_REASONS[protocol].items()
)
# A choice's native_finish_reason (OpenRouter) is the upstream's own, more precise word: when
# the chat table knows it and it means something worse than finish_reason, it is the choice's
# finish reason.  An unknown native value is left alone: OpenRouter's own finish_reason, a
# documented value, still speaks for the choice.
NATIVE_FINISH_RANK = {raw: OUTCOME_RANK[outcome] for raw, (_normalized, outcome) in FINISH_REASONS["chat"].items()}
UNKNOWN_FINISH = ("other", O_ABNORMAL)

# Protocols whose normal finish does not say "tool calls": report tool_calls when calls were made
# and no visible text was (a web search before an answer still finishes "stop").
TOOL_FINISH_FROM_CALLS = frozenset({"responses", "gemini"})

# Error codes/types that mean "this request is wrong", so the same request fails again.  Every
# other in-stream error (overloaded, server_error, rate limits, cancelled, 5xx) is transient.
DETERMINISTIC_ERRORS = frozenset(
    {
        # Anthropic / OpenAI error types and codes
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "billing_error",
        "insufficient_quota",
        "invalid_prompt",
        "invalid_api_key",
        "context_length_exceeded",
        "usage_not_included",
        "tool_use_failed",
        # Google RPC statuses
        "INVALID_ARGUMENT",
        "FAILED_PRECONDITION",
        "PERMISSION_DENIED",
        "UNAUTHENTICATED",
        "NOT_FOUND",
        # HTTP statuses sent as numeric codes
        "400",
        "401",
        "402",
        "403",
        "404",
        "413",
        "422",
    }
)

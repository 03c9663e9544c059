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

PROTOCOLS = ("chat", "responses", "anthropic", "gemini", "bedrock-converse", "bedrock-invoke", "ollama")

# How each protocol's bytes are framed into events: Server-Sent Events (Gemini may also send one
# JSON array, told by its first byte), AWS's binary event stream, or newline-delimited JSON.
FRAMING_SSE = "sse"
FRAMING_EVENTSTREAM = "eventstream"
FRAMING_NDJSON = "ndjson"
FRAMINGS = {
    "chat": FRAMING_SSE,
    "responses": FRAMING_SSE,
    "anthropic": FRAMING_SSE,
    "gemini": FRAMING_SSE,
    "bedrock-converse": FRAMING_EVENTSTREAM,
    "bedrock-invoke": FRAMING_EVENTSTREAM,
    "ollama": FRAMING_NDJSON,
}
# protocol="auto" tells the framing by the stream's first byte (after a BOM): an event stream
# starts with its first frame's total length, a big-endian u32 whose top byte is 0 for any frame
# under 16 MiB; NDJSON with "{"; anything else is read as SSE.
EVENTSTREAM_FIRST_BYTE = 0x00
NDJSON_FIRST_BYTE = ord("{")

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
A_OUTPUT = 42  # output that is not text (audio, an image, a file, code run): counts when non-empty
A_REASONING_TOKENS = 43  # usage's count of reasoning tokens: above 0, the model reasoned unseen
A_ITEM = 44  # one whole output item (Responses) or content block (Anthropic's message_start)
A_ITEM_TEXT = 45  # an item's text: non-empty counts (when the item's kind carries text)
A_ITEM_REFUSAL = 46  # an item's refusal text: non-empty counts
A_OUTPUT_INDEX = 47  # Responses output_index: which item an argument delta belongs to
A_AUDIO_END = 48  # chat delta.audio.expires_at: an audio answer's last chunk (see AUDIO_END_FINISH)
A_CHUNK_BYTES = 49  # Bedrock InvokeModel chunk: "bytes", the model's own event, base64
A_DONE = 50  # Ollama "done": false on every line but the last
A_CALL = 51  # Ollama: one whole tool call (its arguments a JSON object, never fragments)
A_START_TOOL = 52  # Bedrock Converse contentBlockStart: a toolUse block starts (CONVERSE_BLOCKS)
A_START_RESULT = 53  # ... a toolResult block (a server tool's result)
A_START_IMAGE = 54  # ... an image block
# Bedrock InvokeModel: amazon-bedrock-invocationMetrics, which Bedrock adds to the last chunk of
# every model's stream (BEDROCK_INVOKE_END)
A_INVOCATION_METRICS = 55
# bedrock-invoke, models whose chunks are chat-shaped but say why they stopped in
# choices[].stop_reason (Mistral Large's chat format, DeepSeek-R1 as AWS documents its body): the
# choice's finish reason there when finish_reason is absent.  (vLLM's chat chunks carry a
# stop_reason too, the stop string that matched, beside finish_reason: not read in chat.)
A_CHOICE_STOP = 56
# bedrock-invoke: amazon-bedrock-guardrailAction, at the top of the model's event: "INTERVENED"
# when a guardrail replaced the answer (BEDROCK_GUARDRAIL_INTERVENED), "NONE" when it let it pass
A_GUARDRAIL = 57

# Actions whose string value is captured whole (unescaped) for a JSON validator; every other
# captured string keeps at most CAPTURE_BYTES bytes: they are enum values, never payload.
# (A Responses "delta" is captured whole: it may be a function call's argument fragment.)
FULL_CAPTURE_ACTIONS = frozenset({A_TOOL_ARGS, A_DELTA_JSON, A_ARGS, A_DELTA, A_CHUNK_BYTES})
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
        A_CHOICE_STOP,
        A_GUARDRAIL,
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
    ("choices[].stop_reason", A_CHOICE_STOP),
    ("choices[].delta.content", A_TEXT),
    ("choices[].message.content", A_TEXT),  # a whole message (Mistral's chat format on Bedrock)
    ("choices[].text", A_TEXT),  # a completion's text (DeepSeek-R1 on Bedrock, as AWS documents it)
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
    # audio output (gpt-4o-audio: modalities ["text", "audio"]): the audio and its transcript
    # stream in delta.audio while content stays null
    ("choices[].delta.audio.data", A_OUTPUT),
    ("choices[].delta.audio.transcript", A_OUTPUT),
    ("choices[].delta.audio.expires_at", A_AUDIO_END),
    # images from image models behind gateways (OpenRouter, Vercel AI Gateway)
    ("choices[].delta.images[].image_url.url", A_OUTPUT),
    # Groq: "why a stream was stopped early", inside an ordinary chunk
    ("x_groq.error", A_ERROR),
    ("usage.completion_tokens_details.reasoning_tokens", A_REASONING_TOKENS),
    # responses (OpenAI Responses)
    ("code", A_FLAT_CODE),
    ("sequence_number", A_SEQ),
    ("delta", A_DELTA),
    ("arguments", A_ARGS),
    ("output_index", A_OUTPUT_INDEX),
    # whole output items: one in output_item.added/done, every one in a terminal response
    ("item", A_ITEM),
    ("item.type", A_ITEM_TYPE),
    ("item.content[].text", A_ITEM_TEXT),
    ("item.content[].refusal", A_ITEM_REFUSAL),
    ("item.arguments", A_ARGS),
    ("response.output[]", A_ITEM),
    ("response.output[].type", A_ITEM_TYPE),
    ("response.output[].content[].text", A_ITEM_TEXT),
    ("response.output[].content[].refusal", A_ITEM_REFUSAL),
    ("response.output[].arguments", A_ARGS),
    ("response.usage.output_tokens_details.reasoning_tokens", A_REASONING_TOKENS),
    ("response.model", A_MODEL),
    ("response.error", A_ERROR),
    ("response.error.code", A_ERR_CODE),
    ("response.incomplete_details.reason", A_INCOMPLETE_REASON),
    ("response.status", A_STATUS),
    # anthropic (Messages)
    ("index", A_BLOCK_INDEX),
    ("message.model", A_MODEL),
    # a message_start whose message is already whole (programmatic tool calling): its content
    # blocks and stop_reason, with no content_block or message_delta events after it
    ("message.stop_reason", A_STOP_REASON),
    ("message.content[]", A_ITEM),
    ("message.content[].type", A_ITEM_TYPE),
    ("message.content[].text", A_ITEM_TEXT),
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
    # output that is not text: images and audio (inlineData), files, code the model ran
    ("candidates[].content.parts[].inlineData.data", A_OUTPUT),
    ("candidates[].content.parts[].fileData.fileUri", A_OUTPUT),
    ("candidates[].content.parts[].executableCode.code", A_OUTPUT),
    ("candidates[].content.parts[].codeExecutionResult.output", A_OUTPUT),
    ("usageMetadata.thoughtsTokenCount", A_REASONING_TOKENS),
    # bedrock-converse (ConverseStream): each event's payload is its member of the stream union;
    # its name is the frame's :event-type.  Deltas read as Anthropic's do (delta.text above).
    ("contentBlockIndex", A_BLOCK_INDEX),
    ("start.toolUse", A_START_TOOL),
    ("start.toolResult", A_START_RESULT),
    ("start.image", A_START_IMAGE),
    ("delta.toolUse.input", A_DELTA_JSON),
    ("delta.reasoningContent.text", A_DELTA_THINKING),
    ("delta.reasoningContent.redactedContent", A_DELTA_THINKING),
    ("stopReason", A_STOP_REASON),
    # bedrock-invoke (InvokeModelWithResponseStream): a chunk carries the model's own event
    ("bytes", A_CHUNK_BYTES),
    # ... which for the model families that are neither Anthropic's nor OpenAI-compatible is the
    # family's own (BEDROCK_INVOKE_FAMILIES): their text, and the field that says why they ended
    ("amazon-bedrock-invocationMetrics", A_INVOCATION_METRICS),
    ("amazon-bedrock-guardrailAction", A_GUARDRAIL),  # every family, Anthropic's too
    ("generation", A_DELTA_TEXT),  # Meta Llama
    ("stop_reason", A_STOP_REASON),
    ("outputText", A_DELTA_TEXT),  # Amazon Titan Text
    ("completionReason", A_STOP_REASON),
    ("outputs[].text", A_DELTA_TEXT),  # Mistral's text models
    ("outputs[].stop_reason", A_STOP_REASON),
    ("text", A_DELTA_TEXT),  # Cohere Command
    ("finish_reason", A_STOP_REASON),
    ("contentBlockDelta.delta.text", A_DELTA_TEXT),  # Amazon Nova (messages-v1)
    ("contentBlockDelta.delta.reasoningContent.text", A_DELTA_THINKING),
    ("messageStop.stopReason", A_STOP_REASON),
    # ollama (/api/chat and /api/generate): one JSON object per line, the last with done: true
    ("done", A_DONE),
    ("done_reason", A_STOP_REASON),
    ("message.content", A_DELTA_TEXT),
    ("message.thinking", A_DELTA_THINKING),
    ("message.tool_calls[]", A_CALL),
    ("response", A_DELTA_TEXT),
    ("thinking", A_DELTA_THINKING),
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
# The compiled reader hashes each node's keys into a table of this many slots; a node with half as
# many keys or more would be searched key by key (the root holds every protocol's top-level keys).
JSON_KEY_SLOTS = 128
assert all(len(children) < JSON_KEY_SLOTS // 2 for _action, children, _element in JSON_TREE)

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
K_ITEM_DONE = 15  # Responses: an output item is whole (its argument deltas are over)
K_ARGS_DELTA = 16  # Responses: a fragment of a call's JSON arguments
K_OUTPUT = 17  # Responses: output that is not text (audio, a partial image)
K_FINISH_STOP = 18  # Bedrock Converse messageStop: the end, and the stop reason with it

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
        "response.output_item.done": K_ITEM_DONE,
        "response.function_call_arguments.delta": K_ARGS_DELTA,
        "response.function_call_arguments.done": K_ARGS_DONE,
        "response.mcp_call_arguments.delta": K_ARGS_DELTA,
        "response.mcp_call_arguments.done": K_ARGS_DONE,
        "response.audio.delta": K_OUTPUT,
        "response.audio.transcript.delta": K_OUTPUT,
        "response.image_generation_call.partial_image": K_OUTPUT,
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
    # by the frame's :event-type (exceptions are frames of :message-type "exception")
    "bedrock-converse": {
        "messageStart": K_START,
        "contentBlockStart": K_BLOCK_START,
        "contentBlockDelta": K_BLOCK_DELTA,
        "messageStop": K_FINISH_STOP,
    },
}
# Bedrock InvokeModelWithResponseStream: the :event-type of a frame that carries the model's own
# event (base64 in "bytes"); with protocol="auto", an event stream whose first event is one is
# bedrock-invoke, any other bedrock-converse.
BEDROCK_CHUNK_EVENT = "chunk"
# An event-stream frame's :message-type: an event, a modeled exception (its name in
# :exception-type) or a service error (its code in :error-code).
EVENTSTREAM_EVENT = "event"
EVENTSTREAM_EXCEPTION = "exception"
EVENTSTREAM_ERROR = "error"
# A Converse contentBlockStart's block type: the member of its "start" union (a text block has
# no start event).  The record notes it as the block's type, read as Anthropic's block types are.
CONVERSE_START_ACTIONS = {A_START_TOOL: "toolUse", A_START_RESULT: "toolResult", A_START_IMAGE: "image"}


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

# ---------------------------------------------------------------------------------------------
# Output kinds: what an output item (Responses) or a content block (Anthropic) is to the user.
OUT_NONE = 0  # bookkeeping: the user gets nothing from it alone
OUT_TEXT = 1  # carries text: counts as text when its text is non-empty (refusal: as a refusal)
OUT_REASONING = 2  # reasoning: not an answer
OUT_TOOL = 3  # a tool call: the client must run it, or a hosted tool ran it
OUT_OTHER = 4  # output that is not text: an image, an approval request, a tool's result, ...

# type -> (kind, what it is, source).  docs/verdict/protocols.md shows these tables.
RESPONSES_ITEMS = {
    "message": (OUT_TEXT, "the answer: output_text and refusal parts", "OPY `response_output_message.py`"),
    "reasoning": (OUT_REASONING, "reasoning summary or text, or encrypted only", "OPY `response_reasoning_item.py`"),
    "function_call": (OUT_TOOL, "a function the client runs", "OPY `response_function_tool_call.py`"),
    "custom_tool_call": (OUT_TOOL, "a free-form tool the client runs", "OPY `response_custom_tool_call.py`"),
    "computer_call": (OUT_TOOL, "a computer action the client performs", "OPY `response_computer_tool_call.py`"),
    "local_shell_call": (OUT_TOOL, "a command the client runs", "OPY `response_output_item.py` (`LocalShellCall`)"),
    "shell_call": (
        OUT_TOOL,
        "shell commands, run by the client or a hosted container",
        "OPY `response_function_shell_tool_call.py`",
    ),
    "apply_patch_call": (OUT_TOOL, "a file patch the client applies", "OPY `response_apply_patch_tool_call.py`"),
    "tool_search_call": (
        OUT_TOOL,
        "a tool search; with execution client, the client answers it",
        "OPY `response_tool_search_call.py`; vercel/ai `openai-client-tool-search.1.chunks.txt`",
    ),
    "web_search_call": (OUT_TOOL, "a hosted web search", "OPY `response_function_web_search.py`"),
    "file_search_call": (OUT_TOOL, "a hosted file search", "OPY `response_file_search_tool_call.py`"),
    "code_interpreter_call": (
        OUT_TOOL,
        "hosted Python; its outputs may hold images",
        "OPY `response_code_interpreter_tool_call.py`",
    ),
    "mcp_call": (
        OUT_TOOL,
        "a call to a remote MCP server, run by the API",
        "OPY `response_output_item.py` (`McpCall`)",
    ),
    "image_generation_call": (
        OUT_OTHER,
        "a generated image (result: base64)",
        "OPY `response_output_item.py` (`ImageGenerationCall`); vercel/ai `openai-image-generation-tool.1.chunks.txt`",
    ),
    "mcp_approval_request": (
        OUT_OTHER,
        "a remote tool call waiting for the client's approval: the turn ends here",
        "OPY `response_output_item.py` (`McpApprovalRequest`); vercel/ai `openai-mcp-tool-approval.1.chunks.txt`",
    ),
    "compaction": (
        OUT_OTHER,
        "the compacted context (encrypted), for the next request",
        "OPY `response_compaction_item.py`; developers.openai.com/api/docs/guides/compaction",
    ),
    "mcp_list_tools": (
        OUT_NONE,
        "the tools a remote MCP server offers",
        "OPY `response_output_item.py` (`McpListTools`)",
    ),
    "program": (
        OUT_NONE,
        "programmatic tool calling: the program, to send back",
        "OPY `response_output_item.py` (`Program`)",
    ),
    "program_output": (OUT_NONE, "the program's result", "OPY `response_output_item.py` (`ProgramOutput`)"),
    "tool_search_output": (OUT_NONE, "the tools a search loaded", "OPY `response_tool_search_output_item.py`"),
}
# A Responses item type missing from the table that ends so is a tool call (new hosted tools).
RESPONSES_TOOL_ITEM_SUFFIX = "_call"
ANTHROPIC_BLOCKS = {
    "text": (OUT_TEXT, "answer text (text_delta, citations_delta)", "APY `types/text_block.py`"),
    "thinking": (OUT_REASONING, "reasoning (thinking_delta, signature_delta)", "APY `types/thinking_block.py`"),
    "redacted_thinking": (
        OUT_REASONING,
        "encrypted reasoning, whole in its start event",
        "APY `types/redacted_thinking_block.py`",
    ),
    "tool_use": (OUT_TOOL, "a client tool call (input_json_delta)", "APY `types/tool_use_block.py`"),
    "server_tool_use": (
        OUT_TOOL,
        "a server tool call (web search, code execution, ...)",
        "APY `types/server_tool_use_block.py`",
    ),
    "mcp_tool_use": (OUT_TOOL, "a call to a remote MCP server (beta)", "APY `types/beta/beta_mcp_tool_use_block.py`"),
    "web_search_tool_result": (
        OUT_OTHER,
        "a server tool's result, whole in its start event",
        "APY `types/web_search_tool_result_block.py`",
    ),
    "web_fetch_tool_result": (OUT_OTHER, "a server tool's result", "APY `types/web_fetch_tool_result_block.py`"),
    "code_execution_tool_result": (
        OUT_OTHER,
        "a server tool's result",
        "APY `types/code_execution_tool_result_block.py`",
    ),
    "bash_code_execution_tool_result": (
        OUT_OTHER,
        "a server tool's result",
        "APY `types/bash_code_execution_tool_result_block.py`",
    ),
    "text_editor_code_execution_tool_result": (
        OUT_OTHER,
        "a server tool's result",
        "APY `types/text_editor_code_execution_tool_result_block.py`",
    ),
    "tool_search_tool_result": (OUT_OTHER, "a server tool's result", "APY `types/tool_search_tool_result_block.py`"),
    "mcp_tool_result": (
        OUT_OTHER,
        "a remote MCP tool's result (beta)",
        "APY `types/beta/beta_mcp_tool_result_block.py`",
    ),
    "advisor_tool_result": (
        OUT_OTHER,
        "the advisor tool's result (beta)",
        "APY `types/beta/beta_advisor_tool_result_block.py`",
    ),
    "container_upload": (
        OUT_OTHER,
        "a file put in the code execution container",
        "APY `types/container_upload_block.py`",
    ),
    "compaction": (
        OUT_OTHER,
        "the compacted context (beta; one compaction_delta); with stop_reason compaction the whole turn",
        "APY `types/beta/beta_compaction_block.py`; platform.claude.com/docs/en/build-with-claude/compaction",
    ),
    "fallback": (
        OUT_NONE,
        "where a fallback model took over (beta): a marker, no content",
        "APY `types/beta/beta_fallback_block.py`",
    ),
}
# BSM boto/botocore `botocore/data/bedrock-runtime/2023-09-30/service-2.json` (1.44.8).
CONVERSE_BLOCKS = {
    "toolUse": (OUT_TOOL, "a tool call, client or server (input as JSON fragments)", "BSM `ToolUseBlockStart`"),
    "toolResult": (OUT_OTHER, "a server tool's result", "BSM `ToolResultBlockStart`"),
    "image": (OUT_OTHER, "a generated image", "BSM `ImageBlockStart`"),
}
# Every kind by type, the three tables in one (the record reads items before it knows whose they
# are): a type in both ("compaction") is the same kind in both.
assert all(RESPONSES_ITEMS[t][0] == ANTHROPIC_BLOCKS[t][0] for t in set(RESPONSES_ITEMS) & set(ANTHROPIC_BLOCKS))
assert not set(CONVERSE_BLOCKS) & (set(RESPONSES_ITEMS) | set(ANTHROPIC_BLOCKS))
OUTPUT_KINDS = {
    name: row[0] for table in (RESPONSES_ITEMS, ANTHROPIC_BLOCKS, CONVERSE_BLOCKS) for name, row in table.items()
}
# Anthropic blocks whose input arrives as input_json_delta and must parse at the end (and
# Converse's toolUse, whose input arrives as delta.toolUse.input).
ANTHROPIC_JSON_INPUT_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use", "toolUse"})
# What the whole items of an event (Responses items, Anthropic message_start content) held: bits.
ITEM_TEXT = 1
ITEM_REFUSAL = 2
ITEM_REASONING = 4
ITEM_TOOL = 8
ITEM_OUTPUT = 16
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
# A chat chunk whose "object" says the answer is over: Perplexity's last chunk, which carries
# every choice's finish reason and the usage, and after which Perplexity sends no [DONE]
# (perplexityai/api-discussion#209; recorded in crmne/ruby_llm's cassettes
# `chat_streaming_responses_perplexity_sonar_*.yml`, 2026).  It is the end marker when every
# choice begun has its finish reason; the same chunk shape without it stays a cut.
CHAT_DONE_OBJECT = "chat.completion.done"
# A chunk whose "object" is "error" is an error (vLLM before its errors were wrapped in "error",
# Mistral), whatever else it holds.
ERROR_OBJECT = "error"
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
O_NO_ANSWER = "no_answer"  # a finished request that asked for no answer (Ollama's load, unload)

# How bad an outcome is when two words for one finish disagree (choices of n > 1, or a native
# finish reason beside a normalized one): the lower, the worse.
OUTCOME_RANK = {O_ABNORMAL: 0, O_LENGTH: 1, O_FILTER: 2, O_TOOL_MALFORMED: 3, O_PAUSE: 4, O_OK: 5, O_NO_ANSWER: 6}

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

# An OpenAI audio answer may end with no finish_reason: its last chunk is a delta.audio holding
# expires_at and no audio or transcript (openai/openai-node PR #1991, issue #1206).  Such a
# choice, with no finish reason of its own, finishes with this raw value (which names the field
# that said so).
AUDIO_END_FINISH = "expires_at"

# Ollama's last line says "done": true, and since 0.1.35 (ollama/ollama PR #4235, 2024-05) a
# done_reason beside it.  A done line without one is the end of an older server's answer (its
# only word for the end), and of a newer one's whose runner lost the client's connection
# (`DoneReasonConnectionClosed`, whose String() is "", omitted by `omitempty`): it finishes
# with this raw value (which names the field that said so).
OLLAMA_DONE_FINISH = "done"

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
        "MODEL_ARMOR": ("content_filter", O_FILTER),
    },
    "bedrock-converse": {
        "end_turn": ("stop", O_OK),
        "stop_sequence": ("stop", O_OK),
        "tool_use": ("tool_calls", O_OK),
        "max_tokens": ("length", O_LENGTH),
        "model_context_window_exceeded": ("length", O_LENGTH),
        "guardrail_intervened": ("content_filter", O_FILTER),
        "content_filtered": ("content_filter", O_FILTER),
        "malformed_tool_use": ("malformed_tool_call", O_TOOL_MALFORMED),
        "malformed_model_output": ("error", O_ABNORMAL),
    },
    "ollama": {
        "stop": ("stop", O_OK),
        "length": ("length", O_LENGTH),
        "load": ("stop", O_NO_ANSWER),
        "unload": ("stop", O_NO_ANSWER),
        OLLAMA_DONE_FINISH: ("stop", O_OK),
    },
}
# What each value of the other protocols means, and where that is written (the docs' tables).
# Sources: OPY openai/openai-python `src/openai/types/responses/` at e43b4224; APY
# anthropics/anthropic-sdk-python `src/anthropic/types/` at 009b0353; GPY googleapis/python-genai
# `google/genai/types.py` at 66807187.
_GPY_FINISH = "GPY `FinishReason`"
_VERTEX_FINISH = "googleapis/googleapis `google/cloud/aiplatform/v1/content.proto` (`Candidate.FinishReason`)"
# BSM as above; OLL ollama/ollama at fb307609.
_BSM_STOP = "BSM `StopReason`"
_OLLAMA_DONE = "OLL `llm/server.go` (`DoneReason`), `llm/llama_server.go` (`Completion`, `Chat`)"
_OLLAMA_LOAD = "OLL `server/routes.go` (`ChatHandler`, `GenerateHandler`)"
FINISH_MEANINGS = {
    "responses": {
        RESPONSES_COMPLETED: (
            "response.status of a finished response (no reason field exists)",
            "OPY `response_status.py`",
        ),
        "max_output_tokens": (
            "the output token budget ran out; output may be reasoning only",
            "OPY `response.py` (`IncompleteDetails`)",
        ),
        "content_filter": ("a filter stopped the response", "OPY `response.py` (`IncompleteDetails`)"),
        "steered": (
            "the client steered the response to an end (WebSocket mode)",
            "docs.rs `openai-client-base` `response_incomplete_event.rs`",
        ),
        "failed": (
            "response.status: the model failed (see response.error)",
            "OPY `response_status.py`, `response_error.py`",
        ),
        "cancelled": (
            "response.status: a background response was cancelled",
            "OPY `response_status.py`; developers.openai.com/api/docs/guides/background",
        ),
    },
    "anthropic": {
        "end_turn": ("the model finished its turn", "APY `stop_reason.py`"),
        "stop_sequence": ("a stop sequence of the request matched", "APY `stop_reason.py`"),
        "tool_use": ("the model called a client tool and waits for its result", "APY `stop_reason.py`"),
        "max_tokens": ("the request's max_tokens ran out", "APY `stop_reason.py`"),
        "model_context_window_exceeded": (
            "the output filled the model's context window",
            "APY `stop_reason.py`; platform.claude.com handling-stop-reasons",
        ),
        "refusal": (
            "safety classifiers declined; stop_details says why",
            "APY `stop_reason.py`, `refusal_stop_details.py`",
        ),
        "pause_turn": (
            "a server tool loop paused: the client sends the turn back to continue it",
            "APY `stop_reason.py`; platform.claude.com handling-stop-reasons",
        ),
        "compaction": (
            "beta, pause_after_compaction: the context was compacted and the turn paused",
            "APY `beta/beta_stop_reason.py`; platform.claude.com compaction",
        ),
    },
    "gemini": {
        "STOP": ("natural stop, or a stop sequence; also the end of a function call", _GPY_FINISH),
        "MAX_TOKENS": ("the maxOutputTokens budget ran out (thoughts count against it)", _GPY_FINISH),
        "SAFETY": ("the output was flagged for safety", _GPY_FINISH),
        "RECITATION": ("the output was flagged for recitation", _GPY_FINISH),
        "LANGUAGE": ("the output used an unsupported language", _GPY_FINISH),
        "BLOCKLIST": ("the output held blocklisted terms", _GPY_FINISH),
        "PROHIBITED_CONTENT": ("the output may hold prohibited content", _GPY_FINISH),
        "SPII": ("the output may hold sensitive personal information", _GPY_FINISH),
        "IMAGE_SAFETY": ("a generated image was flagged for safety", _GPY_FINISH),
        "IMAGE_PROHIBITED_CONTENT": ("a generated image may hold prohibited content", _GPY_FINISH),
        "IMAGE_RECITATION": ("a generated image was flagged for recitation", _GPY_FINISH),
        "MALFORMED_FUNCTION_CALL": ("the model's function call was not valid", _GPY_FINISH),
        "UNEXPECTED_TOOL_CALL": ("the model's tool call was not valid", _GPY_FINISH),
        "TOO_MANY_TOOL_CALLS": ("the model called too many tools in a row", _GPY_FINISH),
        "OTHER": ("any other reason", _GPY_FINISH),
        "FINISH_REASON_UNSPECIFIED": ("unset: never the value of a finished answer", _GPY_FINISH),
        "NO_IMAGE": ("an image was asked for and none was made", _GPY_FINISH),
        "IMAGE_OTHER": ("image generation stopped for another reason", _GPY_FINISH),
        "MODEL_ARMOR": ("Model Armor blocked the answer (Vertex)", _VERTEX_FINISH),
    },
    "bedrock-converse": {
        "end_turn": ("the model finished its turn", _BSM_STOP),
        "stop_sequence": ("a stop sequence of the request matched", _BSM_STOP),
        "tool_use": ("the model called a tool and waits for its result", _BSM_STOP),
        "max_tokens": ("the request's maxTokens ran out", _BSM_STOP),
        "model_context_window_exceeded": ("the output filled the model's context window", _BSM_STOP),
        "guardrail_intervened": ("a guardrail stopped the answer", _BSM_STOP),
        "content_filtered": ("the model's own content filter stopped the answer", _BSM_STOP),
        "malformed_tool_use": ("the model's tool call was not valid", _BSM_STOP),
        "malformed_model_output": ("the model's output could not be read: a retry may succeed", _BSM_STOP),
    },
    "ollama": {
        "stop": ("the model stopped: end of its turn or a stop sequence", _OLLAMA_DONE),
        "length": ("num_predict, the output token budget, ran out", _OLLAMA_DONE),
        "load": ("a request with no prompt only loaded the model", _OLLAMA_LOAD),
        "unload": ("a request with keep_alive 0 and no prompt only unloaded the model", _OLLAMA_LOAD),
        OLLAMA_DONE_FINISH: (
            'no done_reason beside `"done": true`: a server before 0.1.35, which never sent one',
            "OLL `api/types.go` (`done_reason`, added in PR #4235, v0.1.35)",
        ),
    },
}
assert all(set(FINISH_MEANINGS[p]) == set(FINISH_REASONS[p]) for p in FINISH_MEANINGS)
# Gemini's promptFeedback.blockReason values: each is the finish of an answer never begun
# (content_filtered), whatever it says.
GEMINI_BLOCK_REASONS = {
    "SAFETY": "the prompt was blocked for safety",
    "OTHER": "the prompt was blocked for another reason",
    "BLOCKLIST": "the prompt held blocklisted terms",
    "PROHIBITED_CONTENT": "the prompt held prohibited content",
    "IMAGE_SAFETY": "an image of the prompt was unsafe",
    "MODEL_ARMOR": "Model Armor blocked the prompt (Vertex)",
    "JAILBREAK": "the prompt was judged a jailbreak attempt",
    "BLOCKED_REASON_UNSPECIFIED": "unset: a block that gave no reason",
}

# Gemini's enums as numbers.  Google's generated REST clients ask for
# `$alt=json;enum-encoding=int` (the Vertex SDK's REST transport does), and then finishReason
# and promptFeedback.blockReason arrive as their proto numbers: `"finishReason": 1` is STOP.
# The numbers are Vertex's (google.cloud.aiplatform.v1): 0-10 and the block reasons from
# googleapis/googleapis `google/cloud/aiplatform/v1/content.proto` (`Candidate.FinishReason`)
# and `prediction_service.proto` (`PromptFeedback.BlockedReason`) at f8291d2b, 11-16 from the
# aiplatform_v1 client generated from a later proto (`types/content.py`, 2025).  The Gemini API
# (google.ai.generativelanguage v1beta) numbers its enums otherwise from 6 up (6 LANGUAGE,
# 7 BLOCKLIST, ... 10 MALFORMED_FUNCTION_CALL, 12 UNEXPECTED_TOOL_CALL, 17 IMAGE_RECITATION;
# its block reason 5 is IMAGE_SAFETY): the two agree on 0-5, 11 and 16, and no number is
# success in one and a failure in the other, so a stream from either API is never called
# complete wrongly, though its finish_reason_raw may name the Vertex value.  A number missing
# from the table stays its decimal text, an unknown finish reason (upstream_error).
GEMINI_FINISH_NUMBERS = (
    "FINISH_REASON_UNSPECIFIED",
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "MALFORMED_FUNCTION_CALL",
    "MODEL_ARMOR",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "IMAGE_OTHER",
    "UNEXPECTED_TOOL_CALL",
    "NO_IMAGE",
)
GEMINI_BLOCK_NUMBERS = (
    "BLOCKED_REASON_UNSPECIFIED",
    "SAFETY",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "MODEL_ARMOR",
    "JAILBREAK",
)
assert all(name in FINISH_REASONS["gemini"] for name in GEMINI_FINISH_NUMBERS)
assert all(name in GEMINI_BLOCK_REASONS for name in GEMINI_BLOCK_NUMBERS)

# Gateways forward the other protocols' values into chat streams: OpenRouter as
# native_finish_reason ("completed" from an upstream on the Responses API, "end_turn", "STOP"),
# older LiteLLM releases as finish_reason itself.  They mean in chat what they mean in their own
# protocol (no value is spelled the same with another meaning).
CHAT_FORWARDED_PROTOCOLS = ("responses", "anthropic", "gemini")
FINISH_REASONS["chat"] = {
    **{raw: meaning for protocol in CHAT_FORWARDED_PROTOCOLS for raw, meaning in FINISH_REASONS[protocol].items()},
    **CHAT_FINISH_REASONS,
    AUDIO_END_FINISH: ("stop", O_OK),
}
assert all(
    FINISH_REASONS["chat"][raw] == meaning
    for protocol in CHAT_FORWARDED_PROTOCOLS
    for raw, meaning in FINISH_REASONS[protocol].items()
)
# Bedrock's InvokeModel carries the model's own stream: its finish reasons are the model's
# protocol's (Anthropic's stop_reason, or chat's finish_reason for OpenAI-compatible models), or
# for the other families their own (BEDROCK_INVOKE_FAMILIES).
_BEDROCK_DOCS = "docs.aws.amazon.com/bedrock/latest/userguide/"
_OT = "open-telemetry/opentelemetry-python-contrib at 466ae4c0, botocore instrumentation's recorded streams"
_TL = "traceloop/openllmetry at 93429cfb, bedrock instrumentation's recorded streams"
_PK = "Portkey-AI/gateway at 669825cb, `src/providers/bedrock/`"
_LL = (
    "BerriAI/litellm at 22255128, `llms/bedrock/chat/invoke_transformations/amazon_deepseek_transformation.py`"
    " (DeepSeek-R1)"
)
# Each family: how its events look (what fastsse reads: the text, and the field that says why it
# ended), and the values of that field with what they mean and where that is written.  Its end
# is the chunk that carries amazon-bedrock-invocationMetrics, which Bedrock adds to the last
# chunk of every model's stream (recorded for Titan and Nova: OT, TL).
BEDROCK_INVOKE_FAMILIES = {
    "Meta Llama; DeepSeek-R1 (as LiteLLM reads its stream)": {
        "example": {"generation": "Hi", "prompt_token_count": None, "generation_token_count": 1, "stop_reason": None},
        "end": "stop_reason",
        "values": {
            "stop": (
                "the model finished, or a stop string matched",
                _BEDROCK_DOCS + "model-parameters-meta.html; " + _PK + "; " + _LL,
            ),
            "length": ("max_gen_len ran out", _BEDROCK_DOCS + "model-parameters-meta.html; " + _PK),
        },
    },
    "DeepSeek-R1 (as AWS documents its answer)": {
        "example": {"choices": [{"text": "Hi", "stop_reason": None}]},
        "end": "choices[].stop_reason",
        "values": {
            "stop": ("the model finished", _BEDROCK_DOCS + "model-parameters-deepseek.html"),
            "length": ("max_tokens ran out", _BEDROCK_DOCS + "model-parameters-deepseek.html"),
        },
    },
    "Mistral (chat format: Mistral Large 2 and later)": {
        "example": {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "stop_reason": None}]},
        "end": "choices[].stop_reason",
        "values": {
            "stop": ("the model finished", _BEDROCK_DOCS + "model-parameters-mistral-chat-completion.html"),
            "length": ("max_tokens ran out", _BEDROCK_DOCS + "model-parameters-mistral-chat-completion.html"),
            "tool_calls": (
                "the model called a tool and waits for its result",
                _BEDROCK_DOCS + "model-parameters-mistral-chat-completion.html",
            ),
        },
    },
    "Amazon Titan Text": {
        "example": {"outputText": "Hi", "index": 0},
        "end": "completionReason",
        "values": {
            "FINISH": ("the model finished (the value sent)", _TL + "; " + _OT),
            "FINISHED": (
                "the model finished (as the documentation spells it)",
                _BEDROCK_DOCS + "model-parameters-titan-text.html",
            ),
            "STOP_CRITERIA_MET": (
                "a stop sequence matched",
                _BEDROCK_DOCS + "model-parameters-titan-text.html; " + _PK,
            ),
            "LENGTH": ("maxTokenCount ran out", _OT),
            "CONTENT_FILTERED": (
                "a content filter stopped the answer",
                _BEDROCK_DOCS + "model-parameters-titan-text.html; " + _PK,
            ),
            "RAG_QUERY_WHEN_RAG_DISABLED": (
                "a retrieval query while retrieval is disabled",
                _BEDROCK_DOCS + "model-parameters-titan-text.html; " + _PK,
            ),
        },
    },
    "Mistral (text completion)": {
        "example": {"outputs": [{"text": "Hi", "stop_reason": None}]},
        "end": "outputs[].stop_reason",
        "values": {
            "stop": (
                "the model finished, or a stop string matched",
                _BEDROCK_DOCS + "model-parameters-mistral-text-completion.html; " + _PK,
            ),
            "length": ("max_tokens ran out", _BEDROCK_DOCS + "model-parameters-mistral-text-completion.html; " + _PK),
        },
    },
    "Cohere Command": {
        "example": {"text": "Hi", "is_finished": False},
        "end": "finish_reason",
        "values": {
            "COMPLETE": (
                "the model finished (a tool call too: its calls are in response.tool_calls)",
                _BEDROCK_DOCS + "model-parameters-cohere-command.html; " + _PK,
            ),
            "STOP_SEQUENCE": ("a stop sequence matched", "Cohere's chat API reference"),
            "MAX_TOKENS": ("max_tokens ran out", _BEDROCK_DOCS + "model-parameters-cohere-command.html"),
            "ERROR_LIMIT": (
                "the model's context limit was reached",
                _BEDROCK_DOCS + "model-parameters-cohere-command-r-plus.html",
            ),
            "ERROR_TOXIC": ("the output was judged toxic", _BEDROCK_DOCS + "model-parameters-cohere-command.html"),
            "ERROR": ("the generation failed", _BEDROCK_DOCS + "model-parameters-cohere-command.html"),
            "USER_CANCEL": (
                "the generation was cancelled",
                _BEDROCK_DOCS + "model-parameters-cohere-command-r-plus.html",
            ),
            "TIMEOUT": ("the generation timed out", "Cohere's chat API reference"),
        },
    },
    "Amazon Nova": {
        "example": {"contentBlockDelta": {"delta": {"text": "Hi"}, "contentBlockIndex": 0}},
        "end": "messageStop.stopReason",
        "values": {
            "end_turn": ("the model finished its turn", _OT + "; " + _TL),
            "stop_sequence": ("a stop sequence matched", "as Converse's `StopReason`"),
            "max_tokens": ("maxTokens ran out", _OT),
            "tool_use": ("the model called a tool and waits for its result", _OT),
            "content_filtered": ("a content filter stopped the answer", "as Converse's `StopReason`"),
            "guardrail_intervened": ("a guardrail stopped the answer", "as Converse's `StopReason`"),
        },
    },
}
BEDROCK_INVOKE_END = "amazon-bedrock-invocationMetrics"
_FAMILY_FINISH = {
    "FINISH": ("stop", O_OK),
    "FINISHED": ("stop", O_OK),
    "STOP_CRITERIA_MET": ("stop", O_OK),
    "LENGTH": ("length", O_LENGTH),
    "CONTENT_FILTERED": ("content_filter", O_FILTER),
    "RAG_QUERY_WHEN_RAG_DISABLED": ("error", O_ABNORMAL),
    "COMPLETE": ("stop", O_OK),
    "STOP_SEQUENCE": ("stop", O_OK),
    "MAX_TOKENS": ("length", O_LENGTH),
    "ERROR_LIMIT": ("length", O_LENGTH),
    "ERROR_TOXIC": ("content_filter", O_FILTER),
    "ERROR": ("error", O_ABNORMAL),
    "USER_CANCEL": ("error", O_ABNORMAL),
    "TIMEOUT": ("error", O_ABNORMAL),
    "content_filtered": ("content_filter", O_FILTER),
    "guardrail_intervened": ("content_filter", O_FILTER),
}
FINISH_REASONS["bedrock-invoke"] = {**FINISH_REASONS["chat"], **_FAMILY_FINISH}
# no value means one thing in chat and another in a family
assert all(FINISH_REASONS["chat"].get(raw, meaning) == meaning for raw, meaning in _FAMILY_FINISH.items())
assert all(raw in FINISH_REASONS["bedrock-invoke"] for f in BEDROCK_INVOKE_FAMILIES.values() for raw in f["values"])
# A guardrail on InvokeModel marks the model's events with amazon-bedrock-guardrailAction,
# "INTERVENED" or "NONE" (AWS's InvokeModel API reference).  When it intervened, the user got the
# guardrail's message in place of the model's answer, streamed as the model's events and with
# the model's usual finish: "end_turn" in the Anthropic stream Elastic recorded (elastic/ecs
# `rfcs/text/0050-gen_ai-security-fields.md`).  Such a stream finishes GUARDRAIL_FINISH,
# whatever the model's own reason said, as Converse's stopReason says it.  Bedrock blocks every
# chunk after an intervention (_BEDROCK_DOCS guardrails-streaming.html), and a Titan stream
# recorded whole is that one chunk, without the metrics (traceloop/openllmetry at 232c6522,
# `packages/opentelemetry-instrumentation-bedrock/tests/traces/cassettes/test_guardrails/
# test_guardrail_invoke_stream.yaml`): for every family but Anthropic's, whose message_stop
# still ends its stream, the chunk that says INTERVENED ends the stream as Bedrock's last
# chunk does.
BEDROCK_GUARDRAIL_INTERVENED = "INTERVENED"
GUARDRAIL_FINISH = "guardrail_intervened"
assert FINISH_REASONS["bedrock-invoke"][GUARDRAIL_FINISH] == ("content_filter", O_FILTER)
# A choice's native_finish_reason (OpenRouter) is the upstream's own, more precise word: when
# the chat table knows it and it means something worse than finish_reason, it is the choice's
# finish reason.  An unknown native value is left alone: OpenRouter's own finish_reason, a
# documented value, still speaks for the choice.
NATIVE_FINISH_RANK = {raw: OUTCOME_RANK[outcome] for raw, (_normalized, outcome) in FINISH_REASONS["chat"].items()}
UNKNOWN_FINISH = ("other", O_ABNORMAL)

# Protocols whose normal finish does not say "tool calls": report tool_calls when calls were made
# and no visible text was (a web search before an answer still finishes "stop").
TOOL_FINISH_FROM_CALLS = frozenset({"responses", "gemini", "ollama"})

# Error codes/types that mean "this request is wrong", so the same request fails again.  Every
# other in-stream error (overloaded, server_error, rate limits, cancelled, 5xx) is transient.
# An error is deterministic when its code or its type is one of these (OpenAI's 404 for a model
# that does not exist says code model_not_found, type invalid_request_error).
DETERMINISTIC_ERRORS = frozenset(
    {
        # Anthropic / OpenAI error types and codes
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "billing_error",
        "insufficient_quota",
        "model_not_found",  # OpenAI: 404, "The model `x` does not exist or you do not have access to it."
        "request_too_large",  # Anthropic: 413, the request is over 32 MB (docs.claude.com/en/api/errors)
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
        # Bedrock's exceptions (an event stream frame's :exception-type) that a retry meets again
        "validationException",
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

# ---------------------------------------------------------------------------------------------
# The generation endpoints, by how their path ends: what the tap and the guard judge, and as
# which protocol.  Gemini names its method after the model (``models/NAME:streamGenerateContent``).
ENDPOINTS = (
    ("/chat/completions", "chat"),
    ("/responses", "responses"),
    ("/messages", "anthropic"),
    (":streamGenerateContent", "gemini"),
    (":generateContent", "gemini"),
    ("/converse-stream", "bedrock-converse"),
    ("/invoke-with-response-stream", "bedrock-invoke"),
    ("/api/chat", "ollama"),
    ("/api/generate", "ollama"),
)


# The media types of streamed answers: SSE, and the framings a known endpoint streams in (the
# tap and the guard judge these two only on a generation endpoint's path).
SSE_MEDIA_TYPE = "text/event-stream"
FRAMED_MEDIA_TYPES = {"application/vnd.amazon.eventstream": FRAMING_EVENTSTREAM, "application/x-ndjson": FRAMING_NDJSON}


def stream_protocol(content_type: str, protocol: str | None) -> str | None:
    """The protocol to judge an answer of this Content-Type with, from an endpoint of this
    protocol (None: not a known generation endpoint); None if it is no stream to judge.

    The endpoint's protocol holds when the answer is framed as that protocol frames it; SSE
    from any other path is judged as "auto" (an app's own ``/api/chat`` may stream OpenAI's
    chunks); Bedrock's and Ollama's framings only on their own endpoints."""
    media = content_type.split(";")[0].strip().lower()
    framing = FRAMING_SSE if media == SSE_MEDIA_TYPE else FRAMED_MEDIA_TYPES.get(media)
    if framing is None:
        return None
    if protocol is not None and FRAMINGS[protocol] == framing:
        return protocol
    return "auto" if framing == FRAMING_SSE else None


def protocol_for_path(path: str) -> str | None:
    """The protocol of a generation endpoint's path (``/v1/chat/completions`` is "chat"), or
    None for any other path (model lists, token counts)."""
    path = path.rstrip("/")
    for suffix, protocol in ENDPOINTS:
        if path.endswith(suffix):
            return protocol
    return None

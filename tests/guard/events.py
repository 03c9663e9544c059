"""Answers for the guard's tests, built with the library's own event builders."""

from __future__ import annotations

from tests.fastsse.events import cand, chat_text, g_object, gemini_array, ollama_text, text

CHAT_WHOLE = chat_text("Hello", ", world", ".")
CHAT_CUT = chat_text("Hello", ", wor", finish=None, done=False)
CHAT_LENGTH = chat_text("Hello", ", wor", finish="length")
# Gemini's streamGenerateContent without alt=sse: one JSON array.
GEMINI_ARRAY = gemini_array(g_object(cand(text("The capital"))), g_object(cand(text(" is Paris."), finish="STOP")))


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


OLLAMA_WHOLE = ollama_text("Hello", ", world", ".")
# Every choice finished, then the connection closed without [DONE]: a cut at the very end.
CHAT_NO_DONE = chat_text("Hello", ", world", ".", done=False)

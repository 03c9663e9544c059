"""Framing: bytes -> lines -> events, by the WHATWG event-stream rules.

A stream may start with a UTF-8 BOM (dropped); a line ends at CR, LF or CRLF, and a CRLF may be
split across chunks; a line is a comment (":..."), a field ("name: value", "name:value" or
"name" alone) or empty, which dispatches the event its fields built.  ``Framing`` holds what a
stream has buffered between chunks; ``LineSearch`` remembers, within one chunk, where its next
CR and LF are, so that no byte is searched twice.  The scanner (``_scanner_py``) drives these
and decides what each line means.  The compiled twin's ``_framing.pxd`` holds the same rules.
"""

from __future__ import annotations

BOM = b"\xef\xbb\xbf"
LF, CR, COLON, SPACE, OPEN_OBJECT = b"\n\r: {"

# The fields the scanner reads; any other is ignored, as the spec says.
F_OTHER, F_DATA, F_EVENT, F_ID, F_RETRY, F_ERROR = range(6)
FIELDS = {
    b"data": F_DATA,
    b"event": F_EVENT,
    b"id": F_ID,
    b"retry": F_RETRY,
    b"error": F_ERROR,
}  # llama.cpp sent errors as an "error:" field


class Framing:
    """What a stream has buffered between chunks."""

    __slots__ = (
        "head",
        "at_start",
        "pending_cr",
        "line",
        "data",
        "data_lines",
        "event_type",
        "event_bytes",
        "bare_bytes",
    )

    def __init__(self) -> None:
        self.head = bytearray()  # the first bytes, held until we know whether they are a BOM
        self.at_start = True
        self.pending_cr = False  # the last chunk ended in CR: an LF first in the next is its
        self.line = bytearray()  # the unterminated line so far
        self.data = bytearray()  # the event's data lines, each followed by "\n"
        self.data_lines = 0
        self.event_type: bytes | None = None  # the event's "event:" value
        self.event_bytes = 0  # non-comment line bytes of the event being built
        self.bare_bytes = 0  # of a bare JSON object being read (Gemini's errors)

    def start(self, data: bytes) -> bytes | None:
        """The stream's first bytes: what to read of them, BOM dropped, or None while they may
        still be a BOM's (held)."""
        self.head += data
        if len(self.head) < 3 and BOM.startswith(self.head):
            return None
        data = bytes(self.head[3:] if self.head.startswith(BOM) else self.head)
        self.head.clear()
        self.at_start = False
        return data

    def line_next(self, data: bytes, end: int) -> int:
        """Where the line after the one ending at data[end] starts: past its CR, LF or CRLF
        (a CR last in the chunk leaves pending_cr)."""
        if data[end] == CR:
            if end + 1 == len(data):
                self.pending_cr = True
            elif data[end + 1] == LF:
                end += 1
        return end + 1


class LineSearch:
    """Where one chunk's next LF and CR are, searched once each."""

    __slots__ = ("data", "next_lf", "next_cr")

    def __init__(self, data: bytes, pos: int):
        self.data = data
        self.next_lf = data.find(b"\n", pos)
        self.next_cr = data.find(b"\r", pos)

    def line_end(self, pos: int) -> int:
        """Where the line that starts at data[pos] ends (its CR or LF), or -1."""
        if 0 <= self.next_lf < pos:
            self.next_lf = self.data.find(b"\n", pos)
        if 0 <= self.next_cr < pos:
            self.next_cr = self.data.find(b"\r", pos)
        if self.next_lf < 0:
            return self.next_cr
        if self.next_cr < 0:
            return self.next_lf
        return min(self.next_lf, self.next_cr)


def split_field(line: bytes) -> tuple[int, bytes]:
    """The field a non-empty, non-comment line sets, and its value (after the colon and one
    space; nothing if there is no colon)."""
    colon = line.find(b":")
    if colon < 0:
        return FIELDS.get(line, F_OTHER), b""
    value = line[colon + 1 :]
    if value and value[0] == SPACE:
        value = value[1:]
    return FIELDS.get(line[:colon], F_OTHER), value

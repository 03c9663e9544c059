# The compiled twin's interface (fastsse/_scanner.pyx): the same API as fastsse._scanner_py,
# plus two read-only diagnostics that only the compiled twin has (it alone replays events and
# keeps templates).
from ._verdict import Verdict

class Caches:
    def __init__(self) -> None: ...
    def clear(self) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def template_bytes(self) -> list[bytes]: ...

default_caches: Caches

class Scanner:
    protocol: str
    max_event_bytes: int
    max_line_bytes: int
    caches: Caches
    # Diagnostics: events counted by replaying the one before (in_runs: of those, counted in
    # runs), or from a template.
    replayed: int
    in_runs: int
    templated: int
    def __init__(
        self,
        protocol: str = "auto",
        *,
        max_event_bytes: int = ...,
        max_line_bytes: int = ...,
        caches: Caches | None = None,
    ) -> None: ...
    @property
    def settled(self) -> bool: ...
    @property
    def ended(self) -> bool: ...
    def feed(self, data: bytes | bytearray | memoryview) -> None: ...
    def close(self, transport: str = "eof") -> Verdict: ...

def scan(
    data: bytes | bytearray | memoryview,
    protocol: str = "auto",
    transport: str = "eof",
    *,
    max_event_bytes: int = ...,
    max_line_bytes: int = ...,
    caches: Caches | None = None,
) -> Verdict: ...

# For tests: the widest base64 blocks the decoder may use (2: AVX2, 1: SSSE3, 0: none) where the
# CPU has them; returns the width allowed before.
def _base64_widest(widest: int) -> int: ...

# For tests: zlib.crc32(data, crc) as the compiled twin checks event-stream frames.
def _crc32(crc: int, data: bytes) -> int: ...

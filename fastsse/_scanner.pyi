# The compiled twin's interface (fastsse/_scanner.pyx): the same API as fastsse._scanner_py,
# plus two read-only diagnostics that only the compiled twin has (it alone replays events and
# keeps templates), and the template table's test hooks.
from ._verdict import Verdict

class Scanner:
    protocol: str
    max_event_bytes: int
    max_line_bytes: int
    # Diagnostics: events counted by replaying the one before, or from a template.
    replayed: int
    templated: int
    def __init__(self, protocol: str = "auto", *, max_event_bytes: int = ...,
                 max_line_bytes: int = ...) -> None: ...
    def feed(self, data: bytes | bytearray | memoryview) -> None: ...
    def close(self, transport: str = "eof") -> Verdict: ...

def scan(data: bytes | bytearray | memoryview, protocol: str = "auto", transport: str = "eof",
         *, max_event_bytes: int = ..., max_line_bytes: int = ...) -> Verdict: ...

# Test hooks of the process-wide template table.
def _forget_templates() -> None: ...
def _template_state() -> object: ...
def _template_bytes() -> object: ...

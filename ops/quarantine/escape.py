"""Text from the data, made safe for a terminal: whatever could move its cursor, recolour it or
reorder what it shows is escaped, never passed through."""

from __future__ import annotations

import unicodedata

SAMPLE_CHARS = 120  # a sample's raw text is cut here, after escaping

ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control (C0, DEL, C1 such as CSI), format (bidi overrides, zero-width), line/paragraph separators
# and lone surrogates: what can move a terminal's cursor, recolour it or reorder what it shows.
UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def _escaped(char: str) -> str:
    if char in ESCAPES:
        return ESCAPES[char]
    if unicodedata.category(char) not in UNSAFE_CATEGORIES:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str, limit: int | None = None) -> str:
    """Text that is safe on a terminal: unsafe characters escaped, cut to `limit` with an ellipsis."""
    out, used = [], 0
    for char in text:
        piece = _escaped(char)
        if limit is not None and used + len(piece) > limit:
            return "".join(out) + "…"
        out.append(piece)
        used += len(piece)
    return "".join(out)

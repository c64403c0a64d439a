"""The text profile of a file (encoding, BOM, line endings), and the round trip through it.

A file is decoded to text with `\\n` line endings and remembers how it was stored; encoding
that text again with the same profile gives back the same bytes. So an edit changes only
what it replaces: a CRLF file with a UTF-8 BOM stays CRLF with its BOM.

- Encodings: `utf-8` (with or without a BOM), `utf-16le` and `utf-16be` (with their BOM).
  Anything else (a NUL byte in a file without a UTF-16 BOM, bytes that are not UTF-8) is
  binary, and refused by the text routes and tools.
- Line endings: `crlf` when every `\\n` of the file follows a `\\r` (and there is one at
  least), else `lf`; a mixed file is `lf` and keeps its bytes exactly (nothing converted).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Final, Literal

Encoding = Literal["utf-8", "utf-16le", "utf-16be"]
LineEnding = Literal["lf", "crlf"]

ENCODINGS: Final[tuple[str, ...]] = ("utf-8", "utf-16le", "utf-16be")
LINE_ENDINGS: Final[tuple[str, ...]] = ("lf", "crlf")
_BOMS: Final[dict[str, bytes]] = {
    "utf-8": codecs.BOM_UTF8,
    "utf-16le": codecs.BOM_UTF16_LE,
    "utf-16be": codecs.BOM_UTF16_BE,
}
BINARY_SNIFF_BYTES: Final = 8192


class NotText(ValueError):
    """The bytes are not text in a supported encoding."""


@dataclass(frozen=True)
class TextProfile:
    encoding: Encoding = "utf-8"
    bom: bool = False
    line_ending: LineEnding = "lf"


def sniff_encoding(data: bytes) -> tuple[Encoding, bool]:
    """The encoding the bytes start with (and whether a BOM says so); `NotText` for binary."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8", True
    if data.startswith(codecs.BOM_UTF16_LE):
        return "utf-16le", True
    if data.startswith(codecs.BOM_UTF16_BE):
        return "utf-16be", True
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise NotText("binary content")
    return "utf-8", False


def line_ending_of(text: str) -> LineEnding:
    lf = text.count("\n")
    return "crlf" if lf and text.count("\r\n") == lf else "lf"


def decode(data: bytes) -> tuple[str, TextProfile]:
    """The text (with `\\n` line endings when the file is CRLF) and the file's profile."""
    encoding, bom = sniff_encoding(data)
    body = data[len(_BOMS[encoding]) :] if bom else data
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as err:
        raise NotText(f"not {encoding}") from err
    ending = line_ending_of(text)
    if ending == "crlf":
        text = text.replace("\r\n", "\n")
    return text, TextProfile(encoding=encoding, bom=bom, line_ending=ending)


def decode_prefix(data: bytes, encoding: Encoding) -> tuple[str, int]:
    """Decode a window that may end inside a character: the text of the whole characters
    and the number of bytes they take."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    try:
        text = decoder.decode(data, final=False)
    except UnicodeDecodeError as err:
        raise NotText(f"not {encoding}") from err
    pending = len(decoder.getstate()[0])
    return text, len(data) - pending


def normalize(text: str) -> str:
    """Text as the routes and tools work on it: `\\n` line endings."""
    return text.replace("\r\n", "\n")


def encode(text: str, profile: TextProfile) -> bytes:
    """The bytes of `text` (in `\\n` form, or as-is for an `lf` profile) stored with `profile`."""
    if profile.line_ending == "crlf":
        text = text.replace("\n", "\r\n")
    data = text.encode(profile.encoding)
    return _BOMS[profile.encoding] + data if profile.bom else data

"""Opening a user's text file: what it is (a regular file, not a pipe or a folder) and which
Unicode encoding its byte-order mark declares. No pandas here: the streaming readers use it too."""

from __future__ import annotations

import lzma
from pathlib import Path

from extracteval.errors import InputError

__all__ = ["BOM_CODECS", "UNICODE_BOMS", "bom_codec", "check_regular_file", "read_error", "text_encoding", "read_text", "read_utf8"]

# byte-order marks that declare the encoding (UTF-32 first: its little-endian mark starts with UTF-16's)
BOM_CODECS = ((b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe\x00\x00", "utf-32"), (b"\xfe\xff", "utf-16"), (b"\xff\xfe", "utf-16"))
UNICODE_BOMS = tuple(bom for bom, _ in BOM_CODECS)


def bom_codec(head: bytes) -> str | None:
    """The codec ("utf-16" or "utf-32") whose byte-order mark the first bytes of a text start
    with, or None (UTF-8, with or without its BOM)."""
    return next((codec for bom, codec in BOM_CODECS if head.startswith(bom)), None)


def text_encoding(p: Path) -> str:
    """The codec to open a text file with for streaming: UTF-16/32 when it starts with their
    byte-order mark, else UTF-8 (a BOM dropped)."""
    try:
        with p.open("rb") as fh:
            head = fh.read(4)
    except OSError as e:
        raise read_error(p, e) from None
    return bom_codec(head) or "utf-8-sig"


def read_error(p: Path, e: OSError) -> InputError:
    """The InputError for a file that cannot be opened or read."""
    if isinstance(e, FileNotFoundError):
        return InputError(f"{p}: file not found.")
    if isinstance(e, IsADirectoryError):
        return InputError(f"{p}: is a directory; expected a file.")
    if isinstance(e, PermissionError):
        return InputError(f"{p}: permission denied; cannot read the file.")
    return InputError(f"{p}: cannot read the file ({e.strerror or e}).")


def check_regular_file(p: Path) -> None:
    """Refuse what is not a regular file before opening it: a directory, a named pipe (reading
    one waits for a writer, possibly forever), a device or a socket."""
    import stat

    try:
        mode = p.stat().st_mode
    except OSError as e:
        raise read_error(p, e) from None
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise InputError(f"{p}: is a directory; expected a file.")
    kind = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    raise InputError(f"{p}: is {kind}, not a regular file; expected a file (save the data to a file first).")


def read_text(path: str | Path) -> str:
    """The whole file as text, `.xz` decompressed, clear errors. UTF-8 (a BOM is dropped), or
    UTF-16 / UTF-32 when the file starts with their byte-order mark (what spreadsheet programs
    save as "Unicode text"); other text without a BOM that is not UTF-8 is refused, as is text
    holding a NUL byte (UTF-16 without a BOM, or a binary file)."""
    p = Path(path)
    return _decode(p, _read_bytes(p))


def read_utf8(path: str | Path) -> bytes:
    """The whole file as UTF-8 bytes (a BOM is dropped, UTF-16/32 with a BOM re-encoded), `.xz`
    decompressed, with read_text's checks and errors, for readers that work on bytes: an ASCII
    file (the usual token file) is not decoded only to be encoded again."""
    p = Path(path)
    data = _read_bytes(p)
    if not data.isascii() or b"\x00" in data:
        if data.startswith(UNICODE_BOMS):
            return _decode(p, data).encode("utf-8")
        _decode(p, data)  # the check, with the error read_text gives
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
    return data


def _read_bytes(p: Path) -> bytes:
    check_regular_file(p)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise read_error(p, e) from None
    if p.suffix == ".xz":
        try:
            data = lzma.decompress(data)
        except lzma.LZMAError as e:
            raise InputError(f"{p}: not a valid .xz file ({e}).") from None
    return data


def _decode(p: Path, data: bytes) -> str:
    for bom, codec in BOM_CODECS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as e:
                raise InputError(
                    f"{p}: starts with a {codec.upper()} byte-order mark, but byte {e.start} is not valid {codec.upper()}; "
                    "save the file again as UTF-8 or UTF-16."
                ) from None
            return _no_nul(p, text)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(
            f"{p}: line {line}: expected UTF-8 text, but found byte 0x{data[e.start]:02x} at offset {e.start}; "
            "save the file as UTF-8."
        ) from None
    return _no_nul(p, text)


def _no_nul(p: Path, text: str) -> str:
    at = text.find("\x00")
    if at >= 0:
        line = text.count("\n", 0, at) + 1
        raise InputError(
            f"{p}: line {line}: found a NUL byte, which text files do not hold (a binary file, or UTF-16 text saved "
            "without a byte-order mark); save the file as UTF-8."
        )
    return text

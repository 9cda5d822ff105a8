"""Opening a user's text file: what it is (a regular file, not a pipe or a folder) and which
Unicode encoding its byte-order mark declares. No pandas here: the streaming readers use it too."""

from __future__ import annotations

from pathlib import Path

from extracteval.errors import InputError

__all__ = ["BOM_CODECS", "UNICODE_BOMS", "bom_codec", "check_regular_file", "read_error", "text_encoding"]

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

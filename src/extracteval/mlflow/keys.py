"""MLflow-safe metric keys built from user-chosen names (fields, tags, features, models).

MLflow accepts metric and param keys matching `^[/\\w.\\- :]*$`, at most 250 characters, that do
not change under `posixpath.normpath` (no `..`, no `//`, no leading `/`). A field may be called
anything (`<script>`, `Parteien/Vertrag`, 300 characters of prose), so each *name segment* is
sanitised on its own; the `/` separators between segments stay meaningful. A name longer than
160 characters keeps its first 151 and ends with `-` and 8 hex digits of its SHA-256; names that had
to change and would collide with another name get the same digest suffix (longer where even that
would collide), so the mapping is one-to-one and independent of input order. The original ↔ key
map is logged as an artifact so nothing is lost.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["MAX_KEY_LENGTH", "KeyMap", "sanitize_segment", "bounded_segment", "is_valid_key"]

MAX_KEY_LENGTH = 250
# room left for the longest prefix/suffix we put around a name (`field/…/exact_match_rate/ci_high`)
MAX_SEGMENT_LENGTH = 160
# ASCII only: MLflow's own pattern is Unicode-aware, but other tracking back ends are not
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\- ]+")
_VALID = re.compile(r"^[/\w.\- :]*$")


def _digest(name: str, width: int = 8) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:width]


def _with_digest(segment: str, name: str, width: int = 8) -> str:
    """`segment` cut to leave room for `-` and `width` hex digits of the original name's digest."""
    return segment[: MAX_SEGMENT_LENGTH - width - 1].rstrip() + "-" + _digest(name, width)


def sanitize_segment(name: str) -> str:
    """One path segment of a metric key: unsafe characters → `_`, never `.`/`..`/empty, at most
    160 characters (a longer one is cut and ends with `-` and its digest)."""
    s = _clean(str(name))
    return _with_digest(s, str(name)) if len(s) > MAX_SEGMENT_LENGTH else s


def bounded_segment(segment: str, name: str, limit: int) -> str:
    """A key segment (of `KeyMap.segment`) of at most `limit` characters, for a key that holds
    several names: a longer one is cut and ends with `-` and 8 hex digits of the name's digest."""
    if len(segment) <= limit:
        return segment
    return segment[: max(limit - 9, 1)].rstrip() + "-" + _digest(str(name))


def _clean(name: str) -> str:
    s = _UNSAFE.sub("_", name).strip()
    return "_" + s if s in ("", ".", "..") or s.startswith(".") else s


def is_valid_key(key: str) -> bool:
    """True when MLflow accepts `key` as a metric or param name."""
    if len(key) > MAX_KEY_LENGTH or not _VALID.match(key):
        return False
    norm = posixpath.normpath(key)
    return norm == key and norm != "." and not norm.startswith("..") and not norm.startswith("/")


@dataclass(frozen=True)
class KeyMap:
    """A one-to-one map from names to key segments, plus every full key built from them.

    Example:
        >>> km = KeyMap.build(["party", "<b>x</b>", "a/b"])
        >>> km.segment("party"), km.segment("a/b")
        ('party', 'a_b')
        >>> km.key("field", "<b>x</b>", "f1")
        'field/_b_x_b_/f1'
    """

    segments: Mapping[str, str]
    originals: dict[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def build(cls, names: Iterable[str]) -> "KeyMap":
        distinct = sorted({str(n) for n in names})
        first = {n: sanitize_segment(n) for n in distinct}
        by_segment: dict[str, list[str]] = {}
        for n, s in first.items():
            by_segment.setdefault(s, []).append(n)
        out: dict[str, str] = {}
        for s, group in by_segment.items():
            if len(group) == 1:
                out[group[0]] = s
                continue
            # a collision: every name that was changed gets its digest; an unchanged name keeps its key
            for n in group:
                out[n] = s if n == s else _with_digest(s, n)
        # a digest-suffixed segment may still equal another name's segment: the changed names of
        # such a group take a longer digest, then the whole one
        for width in (16, 64):
            taken: dict[str, list[str]] = {}
            for n, s in out.items():
                taken.setdefault(s, []).append(n)
            clashes = [n for group in taken.values() if len(group) > 1 for n in group if n != out[n]]
            if not clashes:
                break
            for n in clashes:
                out[n] = _with_digest(_clean(n), n, width)
        return cls(segments=out)

    def segment(self, name: str) -> str:
        return self.segments[str(name)]

    def key(self, prefix: str, name: str, *suffix: str) -> str:
        """`prefix/<segment of name>/suffix…`, remembered with its original for the key map."""
        original = "/".join([prefix, str(name), *suffix])
        k = "/".join([prefix, self.segment(name), *suffix])
        if not is_valid_key(k):  # pragma: no cover - guarded by sanitize_segment; kept as a hard stop
            raise ValueError(f"internal error: metric key {k!r} is not valid for MLflow")
        self.originals[k] = original
        return k

    def names_table(self) -> list[dict[str, str]]:
        """Every name with its key segment, sorted by name (the `metric_keys.json` artifact)."""
        return [{"name": n, "key": s} for n, s in sorted(self.segments.items())]

"""Tagging schemes as data: how a sequence of `PREFIX-TYPE` token tags becomes chunks (spans).

Every scheme is a small table over the tag prefixes `O B I E S L U`:

* `starts[prev, cur]` says whether a chunk starts at a token whose prefix is `cur` when the
  previous token's prefix is `prev` *and both have the same type* (a change of type always
  starts a new chunk, and the first token of a sentence always does);
* strict schemes add the shape a well-formed chunk must have (prefix of a one-token chunk, of
  the first, middle and last token of a longer one); a chunk of another shape is *ill-formed*:
  it is dropped and counted, never guessed at;
* `IOB1` and `IOE1` use one prefix only between two adjacent chunks of the same type, so they
  add two context rules: `after[prev, cur]` — a token with prefix `cur` (IOB1 `B`, IOE1 `E`)
  belongs to a chunk only right after a token of its own type whose prefix `prev` the table
  allows; anywhere else it is a *stray* token, in no chunk (dropped and counted as one ill-formed
  token; the token after it is read as if it followed an `O`); and `then_same[last, next]` /
  `then_other[last, next]` — a chunk ending in prefix `last` is well-formed only when the next
  token has a prefix `next` the table allows, of the chunk's type or of another type (an `O`
  token and the sentence end count as `O` of another type). These are seqeval's strict
  `IOB1`/`IOE1`: in IOB1 a `B` that does not follow its own type is ignored (`O B-X I-X` is the
  chunk `I-X`) and a lone `B-X` chunk directly followed by `B-Y` is ill-formed; in IOE1 a chunk
  ending in `E-X` must be followed by `I-X` or `E-X` (`I-X E-X O` is ill-formed).

`conlleval` reproduces conlleval.pl (version 2004-01-26) chunk by chunk, quirks included:

* its only start/end rules are the pairs in `_CONLLEVAL_STARTS` plus "the type changed", so
  `E-X B-X` is NOT a chunk boundary: conlleval merges the two into one chunk (the reference edge case
  `e-b-sequence.iobes.txt`: one gold chunk), and `S-X S-X`, `B-X S-X`, `S-X B-X`, `E-X S-X` are
  merged as well — use `IOBES` for S/E-aware decoding;
* `I-` may start a chunk (lenient IOB1 as in CoNLL-2000), `E-` after `O` starts one;
* the type is everything after the first hyphen (`B-ADJP-X` → `ADJP-X`);
* every chunk is kept (nothing is ill-formed).

conlleval.pl accepts any prefix; extracteval accepts `O` and `B/I/E/S-TYPE` in `conlleval` mode
and rejects anything else (an unknown prefix is reported as bad input with its file and line),
because for that alphabet chunk-by-chunk exact matching provably equals conlleval's counting
(tests/reference/test_conlleval.py checks it against a line-by-line port of conlleval.pl).

Example:
    >>> import numpy as np
    >>> enc = encode_tags(["B-PER", "I-PER", "O", "I-LOC"])
    >>> ch = decode(enc.prefix, enc.type, np.array([True, False, False, False]), get_scheme("conlleval"))
    >>> [(int(s), int(e), enc.types[t]) for s, e, t in zip(ch.start, ch.end, ch.type)]
    [(0, 2, 'PER'), (3, 4, 'LOC')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PREFIXES",
    "Scheme",
    "SCHEMES",
    "get_scheme",
    "EncodedTags",
    "FactorizedTags",
    "encode_tags",
    "Chunks",
    "decode",
    "UnknownTagError",
]

PREFIXES = ("O", "B", "I", "E", "S", "L", "U")
_P = {p: i for i, p in enumerate(PREFIXES)}
O = 0


class UnknownTagError(ValueError):
    """A tag the scheme does not accept; `position` is its index in the input sequence."""

    def __init__(self, position: int, tag: str, scheme: str, allowed: Sequence[str]) -> None:
        self.position = position
        self.tag = tag
        self.scheme = scheme
        self.allowed = tuple(allowed)
        super().__init__(
            f"unknown tag {tag!r} for scheme {scheme}: expected 'O' or PREFIX-TYPE (TYPE-PREFIX with suffix tags) with PREFIX one of {', '.join(allowed)}"
        )


def _table(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    t = np.zeros((len(PREFIXES), len(PREFIXES)), dtype=bool)
    for a, b in pairs:
        t[_P[a], _P[b]] = True
    return t


def _mask(prefixes: str) -> np.ndarray:
    m = np.zeros(len(PREFIXES), dtype=bool)
    for p in prefixes:
        m[_P[p]] = True
    return m


@dataclass(frozen=True, kw_only=True)
class Scheme:
    """One tagging scheme as tables (see the module docstring).

    Attributes:
        name: `conlleval`, `IOB1`, `IOB2`, `IOE1`, `IOE2`, `IOBES` or `BILOU`.
        prefixes: prefixes accepted besides `O`.
        starts: bool[7, 7], chunk starts at (prev prefix, prefix) when the type is unchanged.
        single, first, middle, last: bool[7] masks of the well-formed chunk shapes; None means
            every chunk is kept (conlleval).
        after: bool[7, 7] or None; a prefix whose column has a True belongs to a chunk only right
            after a token of the same type whose prefix is True in that column, else it is a
            stray token (IOB1, IOE1).
        then_same, then_other: bool[7, 7] or None; a chunk whose last prefix is the row is kept
            only if the next token's prefix is True in the row, when that token has the chunk's
            type (`then_same`) or is `O`, the sentence end or of another type (`then_other`).
    """

    name: str
    prefixes: str
    starts: np.ndarray
    single: np.ndarray | None = None
    first: np.ndarray | None = None
    middle: np.ndarray | None = None
    last: np.ndarray | None = None
    after: np.ndarray | None = None
    then_same: np.ndarray | None = None
    then_other: np.ndarray | None = None

    @property
    def strict(self) -> bool:
        return self.single is not None


# conlleval.pl startOfChunk pairs (its type-change and sentence-break rules are generic). Its
# endOfChunk pairs are the same pairs plus "* → O"; for the accepted alphabet a chunk therefore
# ends exactly where the next one starts or at an O / sentence break.
_CONLLEVAL_STARTS = [("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")]


def _follow_table(rows: dict[str, str] | None) -> np.ndarray | None:
    """{last prefix: the next prefixes allowed} → bool[7, 7]; a row not given allows every prefix."""
    if rows is None:
        return None
    t = np.ones((len(PREFIXES), len(PREFIXES)), dtype=bool)
    for a, allowed in rows.items():
        t[_P[a]] = _mask(allowed)
    return t


def _strict(
    name: str, *, single: str, first: str, middle: str, last: str,
    after: dict[str, str] | None = None, then_same: dict[str, str] | None = None, then_other: dict[str, str] | None = None,
) -> Scheme:
    """A strict scheme from its chunk shapes; `after` = {prefix: the same-type prefixes it may
    follow}, `then_same`/`then_other` = {last prefix: the prefixes the next token may have}."""
    prefixes = "".join(sorted(set(single + first + middle + last), key=PREFIXES.index))
    opens = set(single + first) - set(middle + last)  # prefixes that only ever begin a chunk
    closes = set(single + last) - set(first + middle)  # prefixes that only ever end a chunk
    starts = np.zeros((len(PREFIXES), len(PREFIXES)), dtype=bool)
    for a in PREFIXES:
        for b in PREFIXES:
            starts[_P[a], _P[b]] = b in opens or a in closes or a == "O"
    return Scheme(
        name=name,
        prefixes=prefixes,
        starts=starts,
        single=_mask(single),
        first=_mask(first),
        middle=_mask(middle),
        last=_mask(last),
        after=None if after is None else _table([(p, c) for c, ps in after.items() for p in ps]),
        then_same=_follow_table(then_same),
        then_other=_follow_table(then_other),
    )


SCHEMES: dict[str, Scheme] = {
    "conlleval": Scheme(name="conlleval", prefixes="BIES", starts=_table(_CONLLEVAL_STARTS)),
    # well-formed chunks:  IOB2 B I*   IOE2 I* E   IOBES S | B I* E   BILOU U | B I* L
    # IOB1 I+ | B I*, the B right after a token of its type (a one-token B chunk not followed by a B of another type)
    # IOE1 I+ | I* E, the E right after a token of its type and followed by an I or E of its type
    "IOB1": _strict("IOB1", single="BI", first="BI", middle="I", last="I", after={"B": "BI"}, then_other={"B": "OI"}),
    "IOB2": _strict("IOB2", single="B", first="B", middle="I", last="I"),
    "IOE1": _strict("IOE1", single="IE", first="I", middle="I", last="IE", after={"E": "IE"}, then_same={"E": "IE"}, then_other={"E": ""}),
    "IOE2": _strict("IOE2", single="E", first="I", middle="I", last="E"),
    "IOBES": _strict("IOBES", single="S", first="B", middle="I", last="E"),
    "BILOU": _strict("BILOU", single="U", first="B", middle="I", last="L"),
}
_ALIASES = {k.lower(): k for k in SCHEMES}


def get_scheme(name: str | Scheme) -> Scheme:
    """Look a scheme up by name (case-insensitive); the error lists the valid names."""
    if isinstance(name, Scheme):
        return name
    key = _ALIASES.get(str(name).lower())
    if key is None:
        raise ValueError(f"scheme: expected one of {', '.join(SCHEMES)}, but got {name!r}.")
    return SCHEMES[key]


@dataclass(frozen=True)
class FactorizedTags:
    """A string sequence already dictionary-encoded (the token-file reader makes these without a
    Python string per token): `values[codes[i]]` is item i; `values` are distinct, numbered in
    order of first appearance. `encode_tags` and `corpus_from_tags` accept it for a sequence.
    """

    codes: np.ndarray
    values: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.codes)

    def strings(self) -> np.ndarray:
        """The sequence as an object array of strings (each distinct string object shared)."""
        table = np.empty(len(self.values), dtype=object)
        table[:] = self.values
        return table[self.codes]

    def take(self, start: int, stop: int) -> FactorizedTags:
        """Items [start, stop), encoded over the values they use (in order of first appearance)."""
        import pandas as pd

        codes, used = pd.factorize(self.codes[start:stop])
        return FactorizedTags(codes.astype(self.codes.dtype, copy=False), tuple(self.values[int(u)] for u in used))


@dataclass(frozen=True, kw_only=True)
class EncodedTags:
    """A tag sequence as integer codes.

    Attributes:
        prefix: int8 prefix code per token (index into PREFIXES; 0 = O).
        type: int32 type code per token (index into `types`; -1 for O).
        tag: int32 code of the whole tag string per token (index into `tags`), for token accuracy.
        types: type names.
        tags: distinct tag strings.
    """

    prefix: np.ndarray
    type: np.ndarray
    tag: np.ndarray
    types: tuple[str, ...]
    tags: tuple[str, ...]


def encode_tags(
    tags: Sequence[str] | FactorizedTags, *, scheme: str | Scheme = "conlleval", types: Sequence[str] | None = None, suffix: bool = False
) -> EncodedTags:
    """Dictionary-encode tags: each *distinct* tag string is parsed once.

    `types` fixes the type vocabulary (new types are appended), so several sequences can share
    codes. `suffix=True` reads `TYPE-PREFIX` tags (`NP-B`, as seqeval's `suffix=True`); the
    prefix is then after the last hyphen. Raises UnknownTagError for a tag whose prefix the
    scheme does not accept.
    """
    sch = get_scheme(scheme)
    allowed = set(sch.prefixes)
    if isinstance(tags, FactorizedTags):
        distinct = {t: i for i, t in enumerate(tags.values)}
        codes = tags.codes.astype(np.int32, copy=False)
    else:
        # dict.fromkeys and map(dict.__getitem__) run in C: ~30 ns per token
        distinct = {t: i for i, t in enumerate(dict.fromkeys(tags))}
        codes = np.fromiter(map(distinct.__getitem__, tags), dtype=np.int32, count=len(tags))
    type_list = list(types or ())
    type_index = {t: i for i, t in enumerate(type_list)}
    d_prefix = np.zeros(len(distinct), dtype=np.int8)
    d_type = np.full(len(distinct), -1, dtype=np.int32)
    for tag, k in distinct.items():
        if tag == "O":
            continue
        if suffix:
            typ, sep, head = tag.rpartition("-")
        else:
            head, sep, typ = tag.partition("-")
        if not sep or head not in allowed or not typ:
            pos = int(np.flatnonzero(codes == k)[0])
            raise UnknownTagError(pos, tag, sch.name, sorted(allowed, key=PREFIXES.index))
        d_prefix[k] = _P[head]
        if typ not in type_index:
            type_index[typ] = len(type_list)
            type_list.append(typ)
        d_type[k] = type_index[typ]
    return EncodedTags(
        prefix=d_prefix[codes],
        type=d_type[codes],
        tag=codes,
        types=tuple(type_list),
        tags=tuple(distinct),
    )


@dataclass(frozen=True, kw_only=True)
class Chunks:
    """Decoded chunks: token positions [start, end) into the input sequence and type codes.

    `ill_formed` counts chunks a strict scheme dropped; `ill_formed_examples` holds up to five of
    their (start, end) positions.
    """

    start: np.ndarray
    end: np.ndarray
    type: np.ndarray
    ill_formed: int = 0
    ill_formed_examples: tuple[tuple[int, int], ...] = ()


def decode(prefix: np.ndarray, type_: np.ndarray, sentence_start: np.ndarray, scheme: str | Scheme) -> Chunks:
    """Chunks of one tag sequence (all sentences concatenated), vectorised.

    Args:
        prefix: prefix code per token (see `encode_tags`).
        type_: type code per token, -1 for O.
        sentence_start: True at the first token of every sentence (chunks never cross it).
        scheme: scheme name or `Scheme`.
    """
    sch = get_scheme(scheme)
    n = len(prefix)
    if n == 0:
        e = np.zeros(0, dtype=np.int64)
        return Chunks(start=e, end=e.copy(), type=np.zeros(0, dtype=np.int32))
    prefix = np.asarray(prefix, dtype=np.int64)
    type_ = np.asarray(type_, dtype=np.int64)
    sent = np.asarray(sentence_start, dtype=bool).copy()
    sent[0] = True
    inside = prefix != O
    prev_p = np.empty(n, dtype=np.int64)
    prev_p[0] = O
    prev_p[1:] = prefix[:-1]
    prev_t = np.empty(n, dtype=np.int64)
    prev_t[0] = -1
    prev_t[1:] = type_[:-1]
    prev_p[sent] = O  # a sentence break is an O token for the rules
    prev_t[sent] = -1
    stray = np.zeros(0, dtype=np.int64)
    if sch.after is not None:
        # a prefix with an `after` rule (IOB1 B, IOE1 E) anywhere else is a stray token: in no
        # chunk, and the token after it is read as if it followed an O (its own rule, though,
        # looked at the stray's real prefix above)
        lone = sch.after.any(axis=0)[prefix] & ~((prev_t == type_) & sch.after[prev_p, prefix])
        stray = np.flatnonzero(lone)
        if len(stray):
            inside &= ~lone
            behind = stray[stray + 1 < n] + 1
            prev_p[behind] = O
            prev_t[behind] = -1
    start = inside & ((prev_t != type_) | sch.starts[prev_p, prefix])
    # a chunk runs to the next start, O token or sentence break
    stops = np.flatnonzero(start | ~inside | sent)
    # every start is a stop: a chunk ends at the stop after its own, found by position among
    # the stops rather than by a search per chunk
    at = np.flatnonzero(start[stops])
    s = stops[at]
    ends = np.append(stops, n)[at + 1]
    types = type_[s]
    if not sch.strict:
        return Chunks(start=s, end=ends, type=types.astype(np.int32))
    ok = _well_formed(sch, prefix, type_, sent, s, ends, types)
    bad = np.flatnonzero(~ok)
    examples = [(int(s[i]), int(ends[i])) for i in bad[:5]]
    if len(stray):  # a stray token is one ill-formed token
        examples = sorted(examples + [(int(i), int(i) + 1) for i in stray[:5]])[:5]
    return Chunks(
        start=s[ok],
        end=ends[ok],
        type=types[ok].astype(np.int32),
        ill_formed=int(len(bad)) + int(len(stray)),
        ill_formed_examples=tuple(examples),
    )


def _well_formed(sch: Scheme, prefix: np.ndarray, type_: np.ndarray, sent: np.ndarray, s: np.ndarray, ends: np.ndarray, types: np.ndarray) -> np.ndarray:
    """Which chunks [s, ends) have a shape the strict scheme allows: the prefix of a one-token
    chunk, of the first, middle and last token of a longer one, and (IOB1, IOE1) what may follow
    the chunk."""
    n = len(prefix)
    length = ends - s
    first_p = prefix[s]
    last_p = prefix[ends - 1]
    bad_mid = np.concatenate(([0], np.cumsum(~sch.middle[prefix])))  # bad_mid[k] = # bad in [0, k)
    mid_bad = np.where(length > 2, bad_mid[np.maximum(ends - 1, s + 1)] - bad_mid[s + 1], 0)
    ok = np.where(
        length == 1,
        sch.single[first_p],
        sch.first[first_p] & sch.last[last_p] & (mid_bad == 0),
    )
    if sch.then_same is not None or sch.then_other is not None:
        # the token after the chunk (the original one, stray or not); a sentence end is an O
        after_end = np.minimum(ends, n - 1)
        closed = (ends == n) | sent[after_end]
        next_p = np.where(closed, O, prefix[after_end])
        same = ~closed & (type_[after_end] == types)
        every = np.ones((len(PREFIXES), len(PREFIXES)), dtype=bool)
        then_same = every if sch.then_same is None else sch.then_same
        then_other = every if sch.then_other is None else sch.then_other
        ok &= np.where(same, then_same[last_p, next_p], then_other[last_p, next_p])
    return ok

"""A line-by-line Python port of conlleval.pl (version 2004-01-26, default options) used as a
test oracle: it counts chunks with conlleval's own state machine, not with span matching."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

BOUNDARY = "-X-"


def _split(tag: str) -> tuple[str, str]:
    head, sep, typ = tag.partition("-")
    if not sep:
        return tag, ""
    return head, typ if typ else ""


def _end(prev: str, tag: str, prev_type: str, typ: str) -> bool:
    end = (prev, tag) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
    if prev != "O" and prev != "." and prev_type != typ:
        end = True
    if prev in ("]", "["):
        end = True
    return end


def _start(prev: str, tag: str, prev_type: str, typ: str) -> bool:
    start = (prev, tag) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
    if tag != "O" and tag != "." and prev_type != typ:
        start = True
    if tag in ("[", "]"):
        start = True
    return start


def conlleval_counts(lines: Iterable[str]) -> dict:
    """Counts conlleval.pl would print for these lines (`token … gold pred`, blank = break)."""
    correct_chunk = 0
    correct_tags = 0
    found_correct = 0
    found_guessed = 0
    tokens = 0
    in_correct = False
    last_correct, last_guessed, last_ct, last_gt = "O", "O", "", ""
    cc: Counter[str] = Counter()
    fc: Counter[str] = Counter()
    fg: Counter[str] = Counter()
    for line in lines:
        features = line.split()
        if not features or features[0] == BOUNDARY:
            features = [BOUNDARY, "O", "O"]
        guessed, gt = _split(features[-1])
        correct, ct = _split(features[-2])
        first = features[0]
        if first == BOUNDARY:
            guessed = "O"
        if in_correct:
            ec = _end(last_correct, correct, last_ct, ct)
            eg = _end(last_guessed, guessed, last_gt, gt)
            if ec and eg and last_gt == last_ct:
                in_correct = False
                correct_chunk += 1
                cc[last_ct] += 1
            elif ec != eg or gt != ct:
                in_correct = False
        sc = _start(last_correct, correct, last_ct, ct)
        sg = _start(last_guessed, guessed, last_gt, gt)
        if sc and sg and gt == ct:
            in_correct = True
        if sc:
            found_correct += 1
            fc[ct] += 1
        if sg:
            found_guessed += 1
            fg[gt] += 1
        if first != BOUNDARY:
            if correct == guessed and gt == ct:
                correct_tags += 1
            tokens += 1
        last_guessed, last_correct, last_gt, last_ct = guessed, correct, gt, ct
    if in_correct:
        correct_chunk += 1
        cc[last_ct] += 1
    return {
        "tokens": tokens,
        "correct_tags": correct_tags,
        "gold": found_correct,
        "found": found_guessed,
        "correct": correct_chunk,
        "per_type": {t: (cc[t], fg[t], fc[t]) for t in sorted(set(fc) | set(fg))},
    }

"""Scores of a prediction (a cell's output, the next cell) against what really happened.

Three metrics, each in [0, 1]:

* ``exact_match``: 1.0 when both texts are equal once surrounding whitespace is stripped.
* ``rouge_l``: the ROUGE-L F-measure of the ``rouge-score`` package with its default
  tokenizer and no stemmer (lowercase; every run of characters outside ``[a-z0-9]``
  separates tokens), from the longest common subsequence of the two token lists.
* ``chrf``: sacrebleu's sentence-level ``CHRF()`` with its defaults (character n-grams of
  orders 1 to 6, no word n-grams, beta 2, whitespace removed, precision and recall
  averaged over the orders both texts have), divided by 100.

Both agree with their packages to floating-point rounding: there is no known difference,
and tests/test_metrics.py holds them to 1e-12 on random and realistic pairs. Quirks of the
references are kept, not fixed: chrF of two empty or whitespace-only texts is 0 even though
they are equal, as is ROUGE-L when either text has no ``[a-z0-9]`` token (an output of only
punctuation or non-Latin script).

An evaluation scores every step of every trajectory, so ``score_many`` scores pairs in
batches with numpy, a few hundred times faster than the references
(benchmarks/metrics_speed.py):

* chrF counts matched n-grams of all six orders with one sort. Each text position becomes
  a 64-bit key (pair, the next six characters, side); once sorted, the occurrences of an
  n-gram on both sides are one run of keys, whose matches are
  ``min(hyp, ref) = (len - |hyp - ref|) / 2``. ``Counter`` s of n-grams, the plain way, take
  milliseconds per pair; they remain for pairs with more than 254 distinct characters,
  which do not fit a byte per character.
* ROUGE-L turns each token into a code point (its base-37 value, ranked by frequency) and
  hands rapidfuzz's bit-parallel LCS the two strings of code points.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from rapidfuzz import process
from rapidfuzz.distance import LCSseq

from themisto_ext.records import Scores

IntArray = npt.NDArray[np.int64]
UIntArray = npt.NDArray[np.uint64]
FloatArray = npt.NDArray[np.float64]

_BATCH_CHARS = 1 << 16  # amortises numpy's per-call cost; the scratch arrays stay in L2
_MAX_BATCH_PAIRS = (1 << 15) - 1  # chrF keys carry the pair's index in 15 bits

# sacrebleu's CHRF defaults.
_CHAR_ORDER = 6
_BETA_SQUARED = 4

# A chrF text becomes bytes 1..254, followed by _CHAR_ORDER - 1 padding bytes: 0 after a
# hypothesis, 255 after a reference, so that an n-gram running past the end of one text
# never equals an n-gram of the other.
_HYP_PAD = b"\x00" * (_CHAR_ORDER - 1)
_REF_PAD = b"\xff" * (_CHAR_ORDER - 1)
_PAIR_SHIFT = np.uint64(8 * _CHAR_ORDER + 1)
# Sorted keys share their pair and first n characters iff their xor < 2 ** (1 + 8 (6 - n)).
_ORDER_LIMITS = [np.uint64(1 << (1 + 8 * (_CHAR_ORDER - n))) for n in range(1, _CHAR_ORDER + 1)]
_ALL_ONES = np.iinfo(np.uint64).max
# What str.split() splits on (sacrebleu removes whitespace with it). No whitespace character
# is above U+3000, and the table's last entry, U+3001, stands for all of those above.
_ASCII_WHITESPACE = bytes(c for c in range(128) if chr(c).isspace())
_WHITESPACE = np.array([chr(c).isspace() for c in range(0x3002)])

# ROUGE digits of UTF-8 bytes: A-Z and a-z -> 1..26, 0-9 -> 27..36, anything else -> 0, a
# separator. The bytes of non-ASCII characters separate too, as rouge-score's regex does
# after lower(), except for the two characters whose lowercase is ASCII alphanumeric.
_DIGITS = bytes(
    c - 96 if 97 <= c <= 122 else c - 64 if 65 <= c <= 90 else c - 21 if 48 <= c <= 57 else 0
    for c in range(256)
)
_LOWER_TO_ASCII = {"\u0130": "i\u0307", "\u212a": "k"}  # what str.lower() makes of them
_SHORT_TOKEN = 12  # 37**12 < 2**63: tokens up to this long have exact base-37 values
_POW37 = np.array([37**k for k in range(_SHORT_TOKEN + 1)], dtype=np.uint64)
_LONG_TOKEN_BASE = 1 << 63  # above every short token's value
_SURROGATES = 0xD800  # token codes from here on skip the 0x800 surrogates
_MAX_CODE_POINTS = 0x110000 - 0x800


def exact_match(prediction: str, reference: str) -> float:
    return 1.0 if prediction.strip() == reference.strip() else 0.0


def line_exact_match(prediction: str, reference: str) -> float:
    """The share of the reference's lines (not blank, compared without surrounding
    whitespace) that the prediction has exactly, each predicted line matching one at most.

    A next cell almost never comes out whole (whole-cell exact match was 0 for every
    predictor on 11 notebooks), but its lines do. It is a recall: an answer that repeats
    the history gains lines; read it beside the answers cut off at the cap. Not one of
    ``score``'s metrics (the panel's three): the benchmark report computes it for next
    cells."""
    wanted = [line.strip() for line in reference.splitlines() if line.strip()]
    if not wanted:
        return 1.0 if not prediction.strip() else 0.0
    have = Counter(line.strip() for line in prediction.splitlines() if line.strip())
    hits = 0
    for line in wanted:
        if have[line]:
            have[line] -= 1
            hits += 1
    return hits / len(wanted)


def rouge_l(prediction: str, reference: str) -> float:
    return float(_rouge_l_scores(*_lcs_lengths([prediction], [reference], _Scratch()))[0])


def chrf(prediction: str, reference: str) -> float:
    return float(_chrf_scores(*_ngram_matches([prediction], [reference], _Scratch()))[0])


def score(prediction: str, reference: str) -> Scores:
    return score_many([prediction], [reference])[0]


def score_many(predictions: Sequence[str], references: Sequence[str]) -> list[Scores]:
    """``score`` of each pair, in order; much faster than scoring pairs one by one."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    n = len(predictions)
    lcs, prediction_tokens, reference_tokens = np.zeros(n), np.zeros(n), np.zeros(n)
    matches = np.zeros((n, _CHAR_ORDER), dtype=np.int64)
    hyp_chars, ref_chars = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    scratch = _Scratch()
    for lo, hi in _batches(predictions, references):
        batch = predictions[lo:hi], references[lo:hi], scratch
        lcs[lo:hi], prediction_tokens[lo:hi], reference_tokens[lo:hi] = _lcs_lengths(*batch)
        matches[lo:hi], hyp_chars[lo:hi], ref_chars[lo:hi] = _ngram_matches(*batch)
    rouge = _rouge_l_scores(lcs, prediction_tokens, reference_tokens)
    chr_f = _chrf_scores(matches, hyp_chars, ref_chars)
    return [
        {"exact_match": exact_match(p, r), "rouge_l": rl, "chrf": cf}
        for p, r, rl, cf in zip(
            predictions, references, rouge.tolist(), chr_f.tolist(), strict=True
        )
    ]


def _batches(predictions: Sequence[str], references: Sequence[str]) -> Iterator[tuple[int, int]]:
    lo, chars = 0, 0
    for i, (p, r) in enumerate(zip(predictions, references, strict=True)):
        chars += len(p) + len(r)
        if chars >= _BATCH_CHARS or i + 1 - lo >= _MAX_BATCH_PAIRS:
            yield lo, i + 1
            lo, chars = i + 1, 0
    if lo < len(predictions):
        yield lo, len(predictions)


class _Scratch:
    """Working arrays reused from one batch to the next.

    With fresh temporaries in every batch, glibc handed the freed heap back to the kernel
    after each batch and the next one faulted it in again: half the time went to the kernel.
    """

    def __init__(self) -> None:
        self._arrays: dict[str, npt.NDArray[Any]] = {}

    def __call__(self, name: str, size: int, dtype: type[np.generic]) -> npt.NDArray[Any]:
        array = self._arrays.get(name)
        if array is None or len(array) < size:
            grown = size if array is None else max(size, len(array) * 3 // 2)
            array = self._arrays[name] = np.empty(grown, dtype=dtype)
        return array[:size]


# ---------------------------------------------------------------------------- ROUGE-L


def _lcs_lengths(
    predictions: Sequence[str], references: Sequence[str], scratch: _Scratch
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per pair: LCS of the token lists, tokens of the prediction, of the reference."""
    tokens = _token_strings([*predictions, *references], scratch)
    n = len(predictions)
    lcs = process.cpdist(tokens[:n], tokens[n:], scorer=LCSseq.similarity).astype(np.float64)
    prediction_tokens = np.fromiter(map(len, tokens[:n]), dtype=np.float64, count=n)
    reference_tokens = np.fromiter(map(len, tokens[n:]), dtype=np.float64, count=n)
    return lcs, prediction_tokens, reference_tokens


def _rouge_l_scores(
    lcs: FloatArray, prediction_tokens: FloatArray, reference_tokens: FloatArray
) -> FloatArray:
    # rouge-score's arithmetic in its order, so that the results are the same floats.
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = lcs / prediction_tokens
        recall = lcs / reference_tokens
        f = 2 * precision * recall / (precision + recall)
    return np.where(lcs > 0, f, 0.0)


def _token_strings(texts: Sequence[str], scratch: _Scratch) -> list[str] | list[list[int]]:
    """Each text's rouge-score tokens as one code point per token.

    Equal tokens get equal code points across the batch, and frequent tokens the smallest:
    rapidfuzz's LCS looks characters under 256 up in an array, others in a hash map.
    """
    encoded = [_token_bytes(t) for t in texts]
    # A separator before the first text and room after the last for 12-digit windows.
    buf = b"\0" + b"\0".join(encoded).translate(_DIGITS) + b"\0" * (_SHORT_TOKEN + 1)
    raw = np.frombuffer(buf, dtype=np.uint8)
    is_token = scratch("is_token", len(buf), np.bool_)
    np.not_equal(raw, 0, out=is_token)
    changes = scratch("changes", len(buf) - 1, np.bool_)
    np.not_equal(is_token[1:], is_token[:-1], out=changes)
    edges = np.flatnonzero(changes)
    edges += 1
    starts, ends = edges[0::2], edges[1::2]
    if len(starts) == 0:
        return [""] * len(texts)

    values = _token_values(raw, starts, ends, scratch)
    long_tokens = np.flatnonzero(ends - starts > _SHORT_TOKEN).tolist()
    if long_tokens:
        ids: dict[bytes, int] = {}
        for k in long_tokens:
            values[k] = _LONG_TOKEN_BASE + ids.setdefault(buf[starts[k] : ends[k]], len(ids))
    code, distinct = _frequency_ranks(values)

    text_starts = np.cumsum([1] + [len(t) + 1 for t in encoded])
    offsets = np.searchsorted(starts, text_starts).tolist()
    if distinct > _MAX_CODE_POINTS:  # more distinct tokens than code points: use ints
        return [code[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))]
    code += (code >= _SURROGATES) * 0x800  # UTF-32 cannot carry surrogates
    joined_codes = code.astype("<u4").tobytes().decode("utf-32-le")
    return [joined_codes[offsets[i] : offsets[i + 1]] for i in range(len(texts))]


def _frequency_ranks(values: UIntArray) -> tuple[IntArray, int]:
    """Each value's rank among the distinct values, most frequent first; and their number.

    (np.unique with inverse and counts does the same, two to three times slower.)
    """
    order = np.argsort(values)
    ordered = values[order]
    is_first = np.empty(len(values), dtype=np.bool_)
    is_first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=is_first[1:])
    firsts = np.flatnonzero(is_first)
    counts = np.diff(firsts, append=len(values))
    rank = np.empty(len(counts), dtype=np.int64)
    rank[np.argsort(-counts, kind="stable")] = np.arange(len(counts))
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[order] = np.repeat(rank, counts)
    return ranks, len(counts)


def _token_bytes(text: str) -> bytes:
    if text.isascii():
        return text.encode("ascii")
    for character, lowered in _LOWER_TO_ASCII.items():
        if character in text:
            text = text.replace(character, lowered)
    return text.encode("utf-8", "surrogatepass")


def _token_values(
    raw: npt.NDArray[np.uint8], starts: IntArray, ends: IntArray, scratch: _Scratch
) -> UIntArray:
    """Base-37 value of each token's digits (exact for tokens of up to 12 characters)."""
    size = len(raw)
    digits = scratch("digits", size, np.uint64)
    np.copyto(digits, raw)
    # w[k][i]: the k digits from i on as a base-37 number, by doubling k.
    w2 = scratch("w2", size - 1, np.uint64)
    np.multiply(digits[:-1], _POW37[1], out=w2)
    w2 += digits[1:]
    w4 = scratch("w4", size - 3, np.uint64)
    np.multiply(w2[:-2], _POW37[2], out=w4)
    w4 += w2[2:]
    w8 = scratch("w8", size - 7, np.uint64)
    np.multiply(w4[:-4], _POW37[4], out=w8)
    w8 += w4[4:]
    w12 = scratch("w12", size - 11, np.uint64)
    np.multiply(w8[:-4], _POW37[4], out=w12)
    w12 += w4[8 : size - 3]
    # The window at a token's start runs past its end into the window at its end (a
    # separator, then whatever follows), shifted right by the token's length.
    lengths = np.minimum(ends - starts, _SHORT_TOKEN)
    values: UIntArray = w12[starts] - w12[ends] // _POW37[lengths]
    return values


# ---------------------------------------------------------------------------- chrF


def _ngram_matches(
    predictions: Sequence[str], references: Sequence[str], scratch: _Scratch
) -> tuple[IntArray, IntArray, IntArray]:
    """Per pair: matched n-grams of each order, characters of the hypothesis and reference
    (whitespace removed)."""
    pairs = len(predictions)
    matches = np.zeros((pairs, _CHAR_ORDER), dtype=np.int64)
    hyp_lengths = np.empty(pairs, dtype=np.int64)
    ref_lengths = np.empty(pairs, dtype=np.int64)
    fast: list[int] = []
    fast_hyps: list[bytes] = []
    fast_refs: list[bytes] = []
    for i, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        hyp, ref = _symbols(prediction, reference)
        hyp_lengths[i], ref_lengths[i] = len(hyp), len(ref)
        if isinstance(hyp, bytes) and isinstance(ref, bytes):
            fast.append(i)
            fast_hyps.append(hyp)
            fast_refs.append(ref)
        else:
            matches[i] = _counter_matches(str(hyp), str(ref))
    if fast:
        matches[fast] = _sorted_matches(fast_hyps, fast_refs, scratch)
    return matches, hyp_lengths, ref_lengths


def _symbols(prediction: str, reference: str) -> tuple[bytes, bytes] | tuple[str, str]:
    """Both texts without whitespace, as bytes 1..254 (equal for equal characters) when
    they fit, else as str."""
    if prediction.isascii() and reference.isascii():
        hyp = prediction.encode("ascii").translate(None, _ASCII_WHITESPACE)
        ref = reference.encode("ascii").translate(None, _ASCII_WHITESPACE)
        if b"\0" not in hyp and b"\0" not in ref:
            return hyp, ref
    both = (prediction + reference).encode("utf-32-le", "surrogatepass")
    points = np.frombuffer(both, dtype=np.uint32)
    kept = ~_WHITESPACE[np.minimum(points, len(_WHITESPACE) - 1)]
    hyp_length = int(np.count_nonzero(kept[: len(prediction)]))
    points = points[kept]
    # ASCII characters but NUL keep their byte; the others take 128, 129, ...
    other = points - np.uint32(1) >= 127  # NUL wraps around
    others = np.unique(points[other])
    if len(others) <= 127:
        symbols = points.astype(np.uint8)
        symbols[other] = 128 + np.searchsorted(others, points[other])
    else:
        alphabet, inverse = np.unique(points, return_inverse=True)
        if len(alphabet) > 254:
            text = points.tobytes().decode("utf-32-le", "surrogatepass")
            return text[:hyp_length], text[hyp_length:]
        symbols = (inverse + 1).astype(np.uint8)
    encoded = symbols.tobytes()
    return encoded[:hyp_length], encoded[hyp_length:]


def _counter_matches(hyp: str, ref: str) -> list[int]:
    matches = []
    for n in range(1, _CHAR_ORDER + 1):
        h = Counter(hyp[i : i + n] for i in range(len(hyp) - n + 1))
        r = Counter(ref[i : i + n] for i in range(len(ref) - n + 1))
        matches.append(sum((h & r).values()))
    return matches


def _sorted_matches(hyps: list[bytes], refs: list[bytes], scratch: _Scratch) -> IntArray:
    """Matched n-grams (the smaller count of each n-gram, summed) per pair and order."""
    pairs = len(hyps)
    buf = _HYP_PAD.join(hyps) + _HYP_PAD + _REF_PAD.join(refs) + _REF_PAD + b"\xff" * 8
    size = len(buf) - 8
    # A position's key: the 8 bytes from it on, read big-endian, keeping the top 6 ...
    keys = scratch("keys", size, np.uint64)
    np.copyto(keys, np.ndarray(shape=(size,), dtype=">u8", buffer=buf, strides=(1,)))
    keys >>= np.uint64(15)
    keys &= ~np.uint64(1)
    # ... above them its pair, below them its side (1 for the reference).
    lo = 0
    for i, text in enumerate(hyps + refs):
        hi = lo + len(text) + len(_HYP_PAD)
        keys[lo:hi] |= (np.uint64(i % pairs) << _PAIR_SHIFT) | np.uint64(i >= pairs)
        lo = hi
    keys.sort()
    pair_starts = np.searchsorted(keys, np.arange(pairs + 1, dtype=np.uint64) << _PAIR_SHIFT)

    # balance[i]: hypothesis keys minus reference keys among the first i. A run [a, b) of
    # equal n-grams has |hyp - ref| = |balance[b] - balance[a]|.
    signs = scratch("signs", size, np.int64)
    np.bitwise_and(keys, np.uint64(1), out=signs, casting="unsafe")
    signs *= -2
    signs += 1
    balance = scratch("balance", size + 1, np.int64)
    balance[0] = 0
    np.cumsum(signs, out=balance[1:])
    change = scratch("change", size + 1, np.uint64)
    change[0] = change[size] = _ALL_ONES
    np.bitwise_xor(keys[1:], keys[:-1], out=change[1:size])

    is_start = scratch("is_start", size + 1, np.bool_)
    matches = np.empty((pairs, _CHAR_ORDER), dtype=np.int64)
    for n, limit in enumerate(_ORDER_LIMITS):
        # Runs of order n start where keys differ in pair or first n characters; every
        # pair boundary starts one, as do position 0 and the end.
        np.greater_equal(change, limit, out=is_start)
        runs = int(np.count_nonzero(is_start))
        at_starts = scratch("at_starts", runs, np.int64)
        np.compress(is_start, balance, out=at_starts)
        imbalance = scratch("imbalance", runs, np.int64)
        imbalance[0] = 0
        np.subtract(at_starts[1:], at_starts[:-1], out=imbalance[1:])
        np.abs(imbalance, out=imbalance)
        np.cumsum(imbalance, out=imbalance)
        # imbalance[k] now sums runs before the k-th start; index it at each pair's first.
        # (Summing bytes into uint32 avoids numpy's slow bool-to-int64 cast.)
        per_pair_runs = np.add.reduceat(
            is_start[:size].view(np.uint8), pair_starts[:-1], dtype=np.uint32
        )
        first_runs = np.zeros(pairs + 1, dtype=np.int64)
        np.cumsum(per_pair_runs, out=first_runs[1:])
        per_pair = np.diff(imbalance[first_runs])
        matches[:, n] = (np.diff(pair_starts) - per_pair) // 2
    return matches


def _chrf_scores(matches: IntArray, hyp_lengths: IntArray, ref_lengths: IntArray) -> FloatArray:
    """sacrebleu's CHRF._compute_f_score (eps_smoothing=False) per pair, in [0, 1]."""
    avg_precision = np.zeros(len(matches))
    avg_recall = np.zeros(len(matches))
    effective = np.zeros(len(matches), dtype=np.int64)
    for n in range(1, _CHAR_ORDER + 1):
        hyp_ngrams = hyp_lengths - n + 1
        ref_ngrams = ref_lengths - n + 1
        both = (hyp_ngrams > 0) & (ref_ngrams > 0)
        # Adding 0.0 for an order a text lacks keeps sacrebleu's sums bit for bit.
        avg_precision += np.where(both, matches[:, n - 1] / np.maximum(hyp_ngrams, 1), 0.0)
        avg_recall += np.where(both, matches[:, n - 1] / np.maximum(ref_ngrams, 1), 0.0)
        effective += both
    avg_precision /= np.maximum(effective, 1)
    avg_recall /= np.maximum(effective, 1)
    numerator = (1 + _BETA_SQUARED) * avg_precision * avg_recall
    denominator = _BETA_SQUARED * avg_precision + avg_recall
    nonzero = denominator > 0
    return np.where(nonzero, numerator / np.where(nonzero, denominator, 1.0), 0.0)

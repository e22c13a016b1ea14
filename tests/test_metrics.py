"""The metrics against the packages they reimplement: sacrebleu's chrF and rouge-score's
ROUGE-L (test-only dependencies: ``pip install sacrebleu rouge-score``)."""

from __future__ import annotations

import random

import pytest
from rouge_score import rouge_scorer
from sacrebleu.metrics import CHRF

from themisto_ext.prediction import metrics
from themisto_ext.prediction.metrics import (
    chrf,
    exact_match,
    line_exact_match,
    rouge_l,
    score,
    score_many,
)

TOLERANCE = 1e-12
_CHRF = CHRF()
_ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def reference_chrf(prediction: str, reference: str) -> float:
    return _CHRF.sentence_score(prediction, [reference]).score / 100


def reference_rouge_l(prediction: str, reference: str) -> float:
    return _ROUGE.score(reference, prediction)["rougeL"].fmeasure


CODE_WORDS = [
    "df", "data", "import", "numpy", "pandas", "np", "pd", "print", "return", "def", "for",
    "in", "range", "len", "x", "y_2", "model", "fit", "predict", "train_test_split", "score",
    "mean", "std", "None", "True", "False", "self", "shape", "dtype", "float64", "int64",
    "object", "columns", "index", "ValueError", "KeyError", "Traceback", "0.5", "1e-3", "42",
    "-7", "3.14159",
]
PUNCTUATION = list("()[]{}<>:;,.=+-*/%'\"#@!?|&^~`\\_")
UNICODE = [
    *"éèüößñçåøæœÆØÅıİKΣσςπλ日本語中文한국어🙂🚀👍🏽█▌─│┌└├∑√∞≈≠…‘’“”«»",  # noqa: RUF001 (on purpose)
    "\u0301",  # combining acute
    "\u200b",  # zero-width space (not whitespace to str.split)
    "\u05d0",  # hebrew
    "\ud800",  # a lone surrogate, as JSON can produce
]
ODD_SPACE = [" ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\xa0", "\u2028", "\u3000"]


def code_text(rng: random.Random, words: int) -> str:
    parts = []
    for _ in range(words):
        kind = rng.random()
        if kind < 0.6:
            parts.append(rng.choice(CODE_WORDS))
        elif kind < 0.85:
            parts.append(rng.choice(PUNCTUATION))
        else:
            parts.append(rng.choice(ODD_SPACE))
        parts.append(rng.choice([" ", "", "\n", "    "]))
    return "".join(parts)


def unicode_text(rng: random.Random, chars: int) -> str:
    pool = UNICODE + PUNCTUATION + ODD_SPACE + list("abcXYZ019")
    return "".join(rng.choice(pool) for _ in range(chars))


def mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(0, max(1, len(chars) // 10))):
        i = rng.randrange(len(chars) + 1)
        op = rng.random()
        if op < 0.4 and i < len(chars):
            del chars[i]
        elif op < 0.7:
            chars.insert(i, rng.choice(CODE_WORDS + PUNCTUATION + UNICODE[:8]))
        elif i < len(chars):
            chars[i] = chars[i].upper()
    return "".join(chars)


def random_pairs(seed: int, count: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    for _ in range(count):
        kind = rng.randrange(8)
        if kind == 0:
            reference = code_text(rng, rng.randint(1, 200))
            pairs.append((mutate(rng, reference), reference))
        elif kind == 1:
            pairs.append((code_text(rng, rng.randint(0, 60)), code_text(rng, rng.randint(0, 60))))
        elif kind == 2:
            reference = unicode_text(rng, rng.randint(1, 300))
            pairs.append((mutate(rng, reference), reference))
        elif kind == 3:
            text = rng.choice([code_text(rng, 50), unicode_text(rng, 80), "x", ""])
            pairs.append((text, text))
        elif kind == 4:
            blank = "".join(rng.choice(ODD_SPACE) for _ in range(rng.randint(0, 5)))
            other = rng.choice(["", blank, code_text(rng, 20), "a"])
            pairs.append((blank, other) if rng.random() < 0.5 else (other, blank))
        elif kind == 5:  # short texts: fewer characters than chrF's six orders
            alphabet = "abab(.)é日"
            pairs.append(tuple("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7)))
                               for _ in range(2)))  # type: ignore[misc]
        elif kind == 6:
            printable = [chr(c) for c in range(32, 127)] + ["\0", "\x7f"]
            pairs.append(tuple("".join(rng.choice(printable) for _ in range(rng.randint(0, 120)))
                               for _ in range(2)))  # type: ignore[misc]
        else:  # whitespace-only differences
            reference = code_text(rng, rng.randint(5, 80))
            pairs.append((" \n".join(reference.split()) + "\n\n", reference))
    return pairs


def long_pairs(seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(4):
        reference = code_text(rng, rng.randint(1500, 2500))
        pairs.append((mutate(rng, reference), reference))
    pairs.append((unicode_text(rng, 5000), unicode_text(rng, 5000)))
    return pairs


REALISTIC = [
    (
        "   age  income\n0   23   41000\n1   57   38000\n2   31   52000",
        "   age   income\n0   23  41000.0\n1   57  38000.0\n2   31  52000.0\n3   44  61000.0",
    ),
    (
        "<class 'pandas.core.frame.DataFrame'>\nRangeIndex: 1000 entries, 0 to 999\n"
        "Data columns (total 3 columns):\n #   Column  Non-Null Count  Dtype  \n"
        "---  ------  --------------  -----  \n 0   age     1000 non-null   int64  \n"
        "dtypes: int64(1)\nmemory usage: 23.6 KB",
        "<class 'pandas.core.frame.DataFrame'>\nRangeIndex: 1000 entries, 0 to 999\n"
        "Data columns (total 3 columns):\n #   Column  Non-Null Count  Dtype  \n"
        "---  ------  --------------  -----  \n 0   age     998 non-null    float64\n"
        " 1   name    1000 non-null   object \ndtypes: float64(1), object(1)\n"
        "memory usage: 23.6+ KB",
    ),
    (
        "Traceback (most recent call last):\n  File \"<ipython-input-3>\", line 1, in <module>\n"
        "KeyError: 'Age'",
        "---------------------------------------------------------------------------\n"
        "KeyError                                  Traceback (most recent call last)\n"
        "Cell In[3], line 1\n----> 1 df['Age']\n\nKeyError: 'Age'",
    ),
    ("(1000, 3)", "(1000, 3)"),
    ("41.5", "41.53"),
    ("", "Epoch 1/3\n100%|██████████| 32/32 [00:01<00:00, 28.1it/s]\nloss: 0.6931"),
    (
        "import pandas as pd\ndf = pd.read_csv('data.csv')\ndf.head()",
        "import pandas as pd\nimport numpy as np\n\ndf = pd.read_csv(\"data/train.csv\")\n"
        "df.describe()",
    ),
    (
        "for epoch in range(10):\n    model.fit(X_train, y_train)\n    print(epoch, loss)",
        "for epoch in range(epochs):\n    loss = train_one_epoch(model, loader)\n"
        "    print(f'{epoch}: {loss:.4f}')",
    ),
    ("array([0.1, 0.2, 0.3])", "array([0.1 , 0.25, 0.3 ])"),
    ("Σίσυφος ΟΔΟΣ", "σίσυφος οδος"),
]


def assert_agrees(pairs: list[tuple[str, str]]) -> None:
    scores = score_many([p for p, _ in pairs], [r for _, r in pairs])
    for (prediction, reference), ours in zip(pairs, scores, strict=True):
        expected_chrf = reference_chrf(prediction, reference)
        expected_rouge = reference_rouge_l(prediction, reference)
        where = (prediction[:60], reference[:60])
        assert ours["chrf"] == pytest.approx(expected_chrf, abs=TOLERANCE), where
        assert ours["rouge_l"] == pytest.approx(expected_rouge, abs=TOLERANCE), where
        expected_exact = float(prediction.strip() == reference.strip())
        assert ours["exact_match"] == expected_exact, where
        assert all(0.0 <= value <= 1.0 for value in ours.values()), where


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_pairs_agree_with_references(seed):
    assert_agrees(random_pairs(seed, 300))


def test_long_pairs_agree_with_references():
    assert_agrees(long_pairs(7))


def test_realistic_pairs_agree_with_references():
    assert_agrees(REALISTIC)
    # And a realistic near miss scores high but not perfect.
    near = score(*REALISTIC[1])
    assert 0.7 < near["chrf"] < 1 and 0.7 < near["rouge_l"] < 1 and near["exact_match"] == 0


def test_single_pair_functions_match_the_batch():
    pairs = random_pairs(3, 60) + REALISTIC
    batch = score_many([p for p, _ in pairs], [r for _, r in pairs])
    for (prediction, reference), expected in zip(pairs, batch, strict=True):
        assert score(prediction, reference) == expected
        assert chrf(prediction, reference) == expected["chrf"]
        assert rouge_l(prediction, reference) == expected["rouge_l"]
        assert exact_match(prediction, reference) == expected["exact_match"]


def test_batches_split_anywhere_give_the_same_scores(monkeypatch):
    pairs = random_pairs(4, 200)
    predictions, references = [p for p, _ in pairs], [r for _, r in pairs]
    whole = score_many(predictions, references)
    monkeypatch.setattr(metrics, "_BATCH_CHARS", 50)
    assert score_many(predictions, references) == whole
    monkeypatch.setattr(metrics, "_MAX_BATCH_PAIRS", 3)
    assert score_many(predictions, references) == whole


def test_a_batch_of_the_most_pairs_a_key_can_index(monkeypatch):
    monkeypatch.setattr(metrics, "_BATCH_CHARS", 1 << 40)
    count = metrics._MAX_BATCH_PAIRS + 5  # two batches, the first one full
    predictions = ["abc", "abd"] * (count // 2) + ["abc"]
    references = ["abc"] * len(predictions)
    scores = score_many(predictions, references)
    assert [s["chrf"] for s in scores[-5:]] == [
        pytest.approx(reference_chrf(p, "abc"), abs=TOLERANCE) for p in predictions[-5:]
    ]
    assert {s["chrf"] for s in scores[0::2]} == {1.0}
    (abd,) = {s["chrf"] for s in scores[1::2]}
    assert abd == pytest.approx(reference_chrf("abd", "abc"), abs=TOLERANCE)


def test_chrf_is_asymmetric_like_sacrebleu():
    short, long = "df.head()", "df.head(10).T.describe()"
    assert chrf(short, long) != chrf(long, short)
    assert chrf(short, long) == pytest.approx(reference_chrf(short, long), abs=TOLERANCE)
    assert chrf(long, short) == pytest.approx(reference_chrf(long, short), abs=TOLERANCE)


@pytest.mark.parametrize("distinct", [100, 200, 300])
def test_chrf_with_many_distinct_characters(distinct):
    # Up to 127 non-ASCII characters keep ASCII bytes as they are, up to 254 all are
    # renumbered, beyond that n-grams are counted with Counters.
    rng = random.Random(distinct)
    alphabet = [chr(0x4E00 + i) for i in range(distinct)] + list("abc \n")
    reference = "".join(rng.choice(alphabet) for _ in range(3000))
    pairs = [(mutate(rng, reference), reference), (reference, reference[:200])]
    # The hypothesis ends where the reference goes on with its smallest character.
    pairs.append((reference[:300] + "\u4e01\u4e02", "\u4e01\u4e02a" + reference[:50]))
    assert_agrees(pairs)


def test_chrf_with_nul_characters():
    # NUL pads hypotheses in the byte keys; real NULs must take the remapped path.
    pairs = [("a\0b\0c", "a\0b"), ("ab", "ab\0"), ("\0\0\0", "\0\0\0\0"), ("x\0", "x")]
    assert_agrees(pairs)


def test_rouge_long_tokens_are_compared_whole():
    # Beyond 12 characters tokens get ids from a dictionary; same prefix must not match.
    pairs = [
        ("abcdefghijklm abcdefghijkl", "abcdefghijkln abcdefghijkl"),
        ("supercalifragilistic expialidocious", "SUPERCALIFRAGILISTIC expialidocious x"),
        ("a" * 12 + " " + "a" * 13 + " " + "a" * 40, "a" * 13 + " " + "a" * 12 + " " + "a" * 41),
        ("0123456789012345678901234567890 9", "0123456789012345678901234567890 9"),
    ]
    assert_agrees(pairs)
    assert rouge_l("abcdefghijklm", "abcdefghijkln") == 0.0


def test_rouge_tokenization_follows_rouge_score():
    # Lowercasing happens before the [a-z0-9] filter: the Kelvin sign and dotted I become ASCII.
    pairs = [
        ("\u212a9 İstanbul", "k9 i̇stanbul"),
        ("café_au-lait", "caf au lait"),
        ("x1,y2;z3", "X1 Y2 Z3"),
        ("日本語", "日本語"),  # no [a-z0-9] token at all
        ("!!! ...", "!!! ..."),
    ]
    assert_agrees(pairs)
    assert rouge_l("日本語", "日本語") == 0.0


def test_rouge_with_tokens_past_the_surrogate_code_points():
    # More distinct tokens than code points below U+D800: later ones skip the surrogates.
    tokens = [f"t{i}" for i in range(60_000)]
    reference = " ".join(tokens)
    assert rouge_l(reference, reference) == 1.0
    assert rouge_l(" ".join(tokens[::2]), reference) == pytest.approx(2 / 3, abs=TOLERANCE)
    assert rouge_l(" ".join(reversed(tokens)), reference) == pytest.approx(1 / 60_000)


def test_rouge_with_more_distinct_tokens_than_code_points(monkeypatch):
    monkeypatch.setattr(metrics, "_MAX_CODE_POINTS", 5)  # forces lists of ints for rapidfuzz
    assert_agrees(random_pairs(6, 40) + REALISTIC)


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("", "", {"exact_match": 1.0, "rouge_l": 0.0, "chrf": 0.0}),
        (" \n\t", "\n", {"exact_match": 1.0, "rouge_l": 0.0, "chrf": 0.0}),
        ("", "print(1)", {"exact_match": 0.0, "rouge_l": 0.0, "chrf": 0.0}),
        ("print(1)", "", {"exact_match": 0.0, "rouge_l": 0.0, "chrf": 0.0}),
        ("hello world", "hello world", {"exact_match": 1.0, "rouge_l": 1.0, "chrf": 1.0}),
        ("\n  hello world\n", "hello world", {"exact_match": 1.0, "rouge_l": 1.0, "chrf": 1.0}),
        ("hello  world", "hello world", {"exact_match": 0.0, "rouge_l": 1.0, "chrf": 1.0}),
        ("HELLO", "hello", {"exact_match": 0.0, "rouge_l": 1.0, "chrf": 0.0}),
        ("a", "a", {"exact_match": 1.0, "rouge_l": 1.0, "chrf": 1.0}),
        ("abc", "xyz", {"exact_match": 0.0, "rouge_l": 0.0, "chrf": 0.0}),
    ],
)
def test_edge_cases(prediction, reference, expected):
    assert score(prediction, reference) == expected
    assert reference_chrf(prediction, reference) == pytest.approx(expected["chrf"])
    assert reference_rouge_l(prediction, reference) == pytest.approx(expected["rouge_l"])


def test_score_many_checks_lengths_and_accepts_nothing():
    assert score_many([], []) == []
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        score_many(["a", "b"], ["a"])


@pytest.mark.parametrize(("prediction", "reference", "expected"), [
    ("df.head()\nprint(x)", "print(x)\ndf.tail()", 0.5),       # one of the two lines
    ("  x = 1\n\nx = 1", "x = 1\nx = 1\ny = 2", 2 / 3),         # each line matched once
    ("x = 1", "x = 1\nx = 1", 0.5),
    ("a\nb\nc", "", 0.0), ("", "  \n", 1.0),                   # nothing to predict
    ("import numpy as np", "import numpy as np", 1.0),
])
def test_line_exact_match_is_the_share_of_the_real_cells_lines_predicted(
        prediction, reference, expected):
    """Issue 25, item 9: whole-cell exact match is 0 for every predictor on next cells;
    the share of its lines predicted exactly still tells predictors apart."""
    assert line_exact_match(prediction, reference) == pytest.approx(expected)

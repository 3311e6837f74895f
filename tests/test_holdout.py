import numpy as np
import pytest

from topictool.corpus.holdout import HoldoutSpec, parse_holdout, random_order, split_corpus, split_tokens
from topictool.errors import InputError

from .conftest import make_corpus


def test_parse_valid():
    assert parse_holdout("every:5") == HoldoutSpec("every", 5)
    assert parse_holdout(" fraction : 0.2 ") == HoldoutSpec("fraction", 0.2)
    assert str(parse_holdout("every:3")) == "every:3"
    assert str(parse_holdout("fraction:0.25")) == "fraction:0.25"


@pytest.mark.parametrize(
    "junk",
    [
        "every:0",
        "every:1",
        "every:-3",
        "every:2.5",
        "fraction:1.5",
        "fraction:0",
        "fraction:1",
        "fraction:x",
        "every",
        "half:2",
        "",
        "every:5:2",
    ],
)
def test_parse_junk(junk):
    with pytest.raises(InputError):
        parse_holdout(junk)


def _docs(rng, D=40, W=30):
    return [
        {int(w): int(rng.integers(1, 4)) for w in rng.choice(W, size=rng.integers(0, 12), replace=False)}
        for _ in range(D)
    ], [f"w{i}" for i in range(W)]


def _multiset(words):
    return sorted(words.tolist())


def test_every_keeps_the_tokens_and_holds_out_floor_n_over_N():
    docs, vocab = _docs(np.random.default_rng(0))
    c = make_corpus(docs, vocab)
    ptr, words = c.tokens()
    s = split_corpus(c, "every:3", seed=7)
    for d in range(c.D):
        obs = s.observed_words[s.observed_ptr[d] : s.observed_ptr[d + 1]]
        held = s.heldout_words[s.heldout_ptr[d] : s.heldout_ptr[d + 1]]
        n = ptr[d + 1] - ptr[d]
        assert len(held) == n // 3
        assert _multiset(np.concatenate([obs, held])) == _multiset(words[ptr[d] : ptr[d + 1]])


def test_every_takes_positions_N_minus_1_of_the_random_order():
    ptr = np.array([0, 7], dtype=np.int64)
    words = np.arange(7, dtype=np.int32)
    order = random_order(ptr, 3)
    s = split_tokens(ptr, words, "every:3", seed=3)
    assert s.heldout_words.tolist() == words[order][[2, 5]].tolist()
    assert s.observed_words.tolist() == words[order][[0, 1, 3, 4, 6]].tolist()


def test_fraction_rounds_per_document():
    lengths = [0, 1, 2, 3, 4, 5, 10, 11]
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    words = np.zeros(ptr[-1], dtype=np.int32)
    s = split_tokens(ptr, words, "fraction:0.25", seed=1)
    held = np.diff(s.heldout_ptr).tolist()
    assert held == [int(np.floor(0.25 * n + 0.5)) for n in lengths]  # 0 0 1 1 1 1 3 3
    assert (np.diff(s.observed_ptr) + np.diff(s.heldout_ptr)).tolist() == lengths


def test_split_of_a_document_depends_only_on_seed_and_its_index():
    rng = np.random.default_rng(1)
    docs, vocab = _docs(rng)
    a = split_corpus(make_corpus(docs, vocab), "every:2", seed=5)
    docs2 = list(docs)
    docs2[3] = {0: 9, 1: 1}  # change another document
    b = split_corpus(make_corpus(docs2, vocab), "every:2", seed=5)
    for d in range(len(docs)):
        if d == 3:
            continue
        for ptr_a, w_a, ptr_b, w_b in (
            (a.observed_ptr, a.observed_words, b.observed_ptr, b.observed_words),
            (a.heldout_ptr, a.heldout_words, b.heldout_ptr, b.heldout_words),
        ):
            assert w_a[ptr_a[d] : ptr_a[d + 1]].tolist() == w_b[ptr_b[d] : ptr_b[d + 1]].tolist()
    c = split_corpus(make_corpus(docs, vocab), "every:2", seed=6)
    assert a.heldout_words.tolist() != c.heldout_words.tolist()


def test_random_order_is_roughly_uniform():
    # 4000 copies of the document [0 1 2 3 4]: every:5 holds out position 4 of each order
    D = 4000
    ptr = np.arange(0, 5 * D + 1, 5, dtype=np.int64)
    words = np.tile(np.arange(5, dtype=np.int32), D)
    s = split_tokens(ptr, words, "every:5", seed=11)
    counts = np.bincount(s.heldout_words, minlength=5)
    assert counts.sum() == D
    assert np.all(np.abs(counts - D / 5) < 4 * np.sqrt(D * 0.2 * 0.8)), counts


def test_drop_and_map_words():
    ptr = np.array([0, 6, 10], dtype=np.int64)
    words = np.array([0, 1, 2, 0, 1, 2, 2, 2, 1, 0], dtype=np.int32)
    s = split_tokens(ptr, words, "every:2", seed=1)
    keep = np.array([True, False, True])
    t, n_obs, n_held = s.drop_words(keep)
    assert n_obs + n_held == 3
    assert 1 not in t.observed_words and 1 not in t.heldout_words
    assert t.observed_ptr[-1] + t.heldout_ptr[-1] == 7
    m = t.map_words(np.array([5, -1, 7]))
    assert set(m.observed_words.tolist()) | set(m.heldout_words.tolist()) <= {5, 7}

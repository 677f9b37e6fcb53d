"""The event models against scikit-learn, incremental counting, and one-message vs batch scoring."""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.naive_bayes import BernoulliNB, ComplementNB, MultinomialNB

from spamnb.bayes import events, nb, vocabulary
from spamnb.bayes.vocabulary import Rows, Vocabulary, local_rows
from spamnb.mail.sources import Message
from spamnb.models import store
from spamnb.models.model import Model, Scoring
from spamnb.run import classifier
from spamnb.text.tokens import Tokenizer, field_ids
from tests.conftest import (
    LIST_SERVER_FIELDS,
    count_rows,
    counts_of,
    joint_log_likelihood,
    labelled_messages,
    log_odds,
    make_mail,
    rows_of,
)

ALPHAS = (0.01, 0.5, 1.0, 2.5)
OURS_AND_THEIRS = ((functools.partial(events.Multinomial, boolean=False), MultinomialNB), (events.Bernoulli, BernoulliNB))


def random_counts(seed: int, n: int = 60, v: int = 40, density: float = 0.15) -> tuple[scipy.sparse.csr_matrix, np.ndarray]:
    """A sparse count matrix (some columns empty, some rows empty) and labels of both classes."""
    rng = np.random.default_rng(seed)
    X = scipy.sparse.random(n, v, density=density, format="csr", random_state=rng, data_rvs=lambda k: rng.integers(1, 6, k))
    X = X.tolil()
    X[:, v - 3 :] = 0  # tokens neither class has
    X[2, :] = 0  # a message with no known token
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    return X.tocsr().astype(np.float64), y


def assert_counts_equal(a: nb.Counts, b: nb.Counts) -> None:
    np.testing.assert_array_equal(a.docs, b.docs)
    np.testing.assert_array_equal(a.tf, b.tf)
    np.testing.assert_array_equal(a.df, b.df)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize(("ours", "theirs"), OURS_AND_THEIRS, ids=["multinomial", "bernoulli"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_joint_log_likelihood_matches_scikit_learn(alpha: float, ours: type[nb.EventModel], theirs: type, seed: int) -> None:
    X, y = random_counts(seed)
    X_test, _ = random_counts(seed + 100, n=30)
    reference = theirs(alpha=alpha).fit(X, y)
    model = ours(alpha)
    counts = counts_of(X, y)
    for data in (X, X_test, X_test.toarray()):
        jll = joint_log_likelihood(model, counts, data)
        np.testing.assert_allclose(jll, reference.predict_joint_log_proba(data), rtol=0, atol=1e-9)
        # scikit-learn counts every token on its own: no duplicate evidence rule (least=0)
        np.testing.assert_allclose(log_odds(model, counts, data, least=0), jll[:, 1] - jll[:, 0], rtol=0, atol=1e-9)

@pytest.mark.parametrize("seed", [0, 1])
def test_boolean_multinomial_is_scikit_learn_on_binarised_counts(seed: int) -> None:
    X, y = random_counts(seed)
    X_test, _ = random_counts(seed + 100, n=30)
    binary = (X > 0).astype(np.float64)
    reference = MultinomialNB(alpha=0.5).fit(binary, y)
    model = events.Multinomial(0.5)
    assert model.boolean
    jll = joint_log_likelihood(model, counts_of(X, y), X_test)
    np.testing.assert_allclose(jll, reference.predict_joint_log_proba((X_test > 0).astype(np.float64)), rtol=0, atol=1e-9)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("boolean", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_complement_matches_scikit_learn(alpha: float, norm: bool, boolean: bool, seed: int) -> None:
    X, y = random_counts(seed)
    X_test, _ = random_counts(seed + 100, n=30)
    binarised = (lambda m: (m > 0).astype(np.float64)) if boolean else (lambda m: m)
    reference = ComplementNB(alpha=alpha, norm=norm).fit(binarised(X), y)
    model = events.Complement(alpha, boolean=boolean, norm=norm)
    counts = counts_of(X, y)
    np.testing.assert_allclose(model.feature_log_prob(counts), reference.feature_log_prob_, rtol=0, atol=1e-9)
    cols = np.array([5, 0, 17])
    np.testing.assert_allclose(model.feature_log_prob(counts, cols), reference.feature_log_prob_[:, cols], rtol=0, atol=1e-9)
    for data in (X, X_test, X_test.toarray()):
        theirs = reference.predict_joint_log_proba(binarised(data))
        # scikit-learn counts every token on its own: no duplicate evidence rule (least=0)
        np.testing.assert_allclose(log_odds(model, counts, data, least=0), theirs[:, 1] - theirs[:, 0], rtol=0, atol=1e-9)


def test_unnormalised_complement_ranks_as_the_multinomial() -> None:
    """Two classes: the complements' difference is the multinomial's weight vector, prior aside."""
    X, y = random_counts(3)
    counts = counts_of(X, y)
    w_c, b_c = events.Complement(0.5, norm=False).weights(counts)
    w_m, b_m = events.Multinomial(0.5).weights(counts)
    np.testing.assert_allclose(w_c, w_m, rtol=0, atol=1e-12)
    assert b_c == 0.0 and b_m != 0.0


def test_counts_are_what_they_say() -> None:
    X = np.array([[2, 0, 1], [0, 3, 0], [1, 1, 0]])
    counts = counts_of(X, np.array([1, 0, 1]))
    np.testing.assert_array_equal(counts.docs, [1, 2])
    np.testing.assert_array_equal(counts.tf, [[0, 3, 0], [3, 1, 1]])
    np.testing.assert_array_equal(counts.df, [[0, 1, 0], [2, 1, 1]])


def test_adding_two_halves_equals_adding_all() -> None:
    X, y = random_counts(7)
    halves = nb.Counts.empty(X.shape[1])
    halves.add(rows_of(X[:25]), y[:25])
    halves.add(rows_of(X[25:]), y[25:])
    assert_counts_equal(halves, counts_of(X, y))


def test_narrower_rows_first_then_wider_ones() -> None:
    X, y = random_counts(8)
    grown = nb.Counts.empty()
    grown.add(rows_of(X[:30, :20]), y[:30])  # an earlier, smaller vocabulary
    grown.add(rows_of(X[30:]), y[30:])
    grown.grow(X.shape[1])  # the vocabulary's width: the last columns may be in no row
    head = X[:30].tolil()
    head[:, 20:] = 0
    assert_counts_equal(grown, counts_of(scipy.sparse.vstack([head.tocsr(), X[30:]]), y))


def test_counts_in_either_memory_order_add_alike() -> None:
    # A saved model's counts come back in Fortran order (`take` makes it); learning into
    # them adds at the same cells as into counts in C order, and keeps their order.
    X, y = random_counts(10)
    fortran = counts_of(X[:30], y[:30]).take(np.arange(X.shape[1]))
    assert fortran.tf.flags.f_contiguous and not fortran.tf.flags.c_contiguous
    fortran.add(rows_of(X[30:]), y[30:], np.where(np.arange(30) % 3 == 0, -1, 1))
    want = counts_of(X[:30], y[:30])
    want.add(rows_of(X[30:]), y[30:], np.where(np.arange(30) % 3 == 0, -1, 1))
    assert_counts_equal(fortran, want)
    assert fortran.tf.flags.f_contiguous and fortran.df.flags.f_contiguous


@pytest.mark.parametrize("order", ["C", "F"])
def test_spare_columns_are_cut_to_the_width_asked_for(order: str) -> None:
    X, y = random_counts(11)
    spared = counts_of(X[:30, :20], y[:30])
    spared = spared.with_arrays(spared.docs, tuple(np.asarray(a, order=order) for a in spared.arrays()))
    spared.grow(25, spare=True)  # room for twice the width: 40 columns
    assert spared.n_features == 40
    spared.add(rows_of(X[30:, :25]), y[30:])
    spared.resize(25)
    want = counts_of(X[:30, :20], y[:30])
    want.grow(25)
    want.add(rows_of(X[30:, :25]), y[30:])
    assert spared.n_features == 25
    assert_counts_equal(spared, want)
    assert all(a.flags.c_contiguous if order == "C" else a.flags.f_contiguous for a in spared.arrays())


def test_subtracting_restores_the_counts() -> None:
    X, y = random_counts(9)
    counts = counts_of(X[:40], y[:40])
    before = nb.Counts(counts.docs.copy(), counts.tf.copy(), counts.df.copy())
    counts.add(rows_of(X[40:]), y[40:])
    counts.add(rows_of(X[40:]), y[40:], -np.ones(len(y) - 40, np.int64))
    assert_counts_equal(counts, before)


@pytest.mark.parametrize("order", ["C", "F"])
def test_taking_columns_gives_indexings_values_and_layout(order: str) -> None:
    # A learn's counts are in C order, a loaded model's in Fortran order; a model saved from
    # either (its columns taken in token order) is the same bytes, those of `a[:, cols]`.
    X, y = random_counts(11)
    counts = counts_of(X, y)
    counts = counts.with_arrays(counts.docs, tuple(np.asarray(a, order=order) for a in counts.arrays()))
    cols = np.random.default_rng(11).permutation(X.shape[1])[:25]
    taken = counts.take(cols)
    for mine, whole in zip(taken.arrays(), counts.arrays(), strict=True):
        np.testing.assert_array_equal(mine, whole[:, cols])
        assert mine.flags.f_contiguous and not mine.flags.c_contiguous
        assert np.lib.format.header_data_from_array_1_0(mine) == np.lib.format.header_data_from_array_1_0(whole[:, cols])


@pytest.mark.parametrize("name", ["multinomial", "bernoulli"])
def test_empty_message_scores_the_prior_and_absent_tokens(name: str) -> None:
    X, y = random_counts(3)
    model = events.event_model(name, 1.0)
    counts = counts_of(X, y)
    jll = joint_log_likelihood(model, counts, np.zeros((1, X.shape[1])))
    np.testing.assert_allclose(log_odds(model, counts, np.zeros((1, X.shape[1])), least=0), jll[:, 1] - jll[:, 0], atol=1e-9)
    if name == "multinomial":
        prior = np.log(counts.docs / counts.docs.sum())
        np.testing.assert_allclose(jll[0], prior, atol=1e-12)


@pytest.mark.parametrize("name", sorted(events.EVENT_MODELS))
def test_tokens_of_the_same_messages_are_one_piece_of_evidence(name: str) -> None:
    """Columns 0-2 were learnt from the same 12 messages (a list's headers): a message holding
    all three scores as one holding one of them; rarer twins (columns 3, 4) stay apart."""
    least = events.event_model(name).duplicate_min
    df = np.array([[2, 2, 2, 0, 0, 5], [10, 10, 10, 1, 1, 1]])
    assert df[:, 0].sum() >= least > df[:, 3].sum()
    counts = nb.Counts(docs=np.array([20, 20]), tf=df.copy(), df=df)
    model = events.event_model(name)
    one, three = np.array([[1.0, 0, 0, 0, 0, 1]]), np.array([[1.0, 1, 1, 0, 0, 1]])
    assert log_odds(model, counts, three) == pytest.approx(log_odds(model, counts, one), abs=1e-12)
    assert log_odds(model, counts, three, least=0) > log_odds(model, counts, one, least=0)
    rare_one, rare_two = np.array([[0, 0, 0, 1.0, 0, 1]]), np.array([[0, 0, 0, 1.0, 1, 1]])
    assert log_odds(model, counts, rare_two) > log_odds(model, counts, rare_one)
    # sparse rows score as dense ones, and a lone 1-d row as that row
    X = scipy.sparse.csr_matrix(np.vstack([one, three, rare_two]))
    np.testing.assert_allclose(log_odds(model, counts, X), log_odds(model, counts, X.toarray()), rtol=0, atol=1e-12)
    np.testing.assert_allclose(log_odds(model, counts, three[0]), log_odds(model, counts, three), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("name", "alpha"), [("multinomial", 0), ("bernoulli", -1.0), ("gaussian", 1.0)])
def test_bad_event_model_or_alpha(name: str, alpha: float) -> None:
    with pytest.raises(ValueError):
        events.event_model(name, alpha)


def test_one_class_model_is_refused() -> None:
    counts = counts_of(np.ones((2, 3)), np.array([1, 1]))
    with pytest.raises(ValueError, match="no ham"):
        nb.check_trained(counts)


def test_count_rows_drops_unknown_columns_and_sums_repeats() -> None:
    rows = count_rows([[0, 2, 2, -1], [], [1]], 3)
    np.testing.assert_array_equal(rows.toarray(), [[1, 0, 2], [0, 0, 0], [0, 1, 0]])


TOKEN_LISTS = st.lists(st.lists(st.sampled_from(["a", "b", "c", "dd", "e-e", "ü", "f"]), max_size=12), max_size=8)


@pytest.mark.parametrize("way", ["compiled", "pure"])
@given(token_lists=TOKEN_LISTS)
def test_local_rows_are_each_messages_token_counts(way: str, token_lists: list[list[str]]) -> None:
    """The same chunk counted in C (spamnb/text/_ctokens.c) and by the numpy path."""
    if way == "compiled" and vocabulary.COUNTED is None:
        pytest.skip("compiled token counter not built, or SPAMNB_PURE set")
    with pytest.MonkeyPatch.context() as patch:
        if way == "pure":
            patch.setattr(vocabulary, "COUNTED", None)
        chunk = local_rows(token_lists)
    rows = chunk.rows
    assert (rows.cols.dtype, rows.counts.dtype, rows.lengths.dtype) == (np.int32, np.int32, np.int64)
    assert chunk.tokens == list(dict.fromkeys(t for tokens in token_lists for t in tokens))
    starts = np.concatenate(([0], np.cumsum(rows.lengths)))
    for i, tokens in enumerate(token_lists):
        part = slice(starts[i], starts[i + 1])
        assert dict(zip([chunk.tokens[c] for c in rows.cols[part]], rows.counts[part].tolist(), strict=True)) == Counter(tokens)


@given(token_lists=TOKEN_LISTS, extra=st.lists(st.sampled_from(["", "a\nb", "\n", "\udcff", "x y"]), max_size=3))
def test_a_chunk_crosses_a_pipe_with_its_tokens_and_rows_as_they_were(token_lists: list[list[str]], extra: list[str]) -> None:
    """A Chunk pickled (as a pool's worker sends it): its tokens joined by newlines where none
    holds one, else as a list; either way the same tokens, rows and arrays come back."""
    chunk = local_rows(token_lists)._replace(numeric=np.arange(6).reshape(2, 3))
    chunk = chunk._replace(tokens=chunk.tokens + extra)
    back = pickle.loads(pickle.dumps(chunk))
    assert type(back) is vocabulary.Chunk and back.tokens == chunk.tokens and back.columns is None
    assert all(np.array_equal(a, b) for a, b in zip(back.rows[:3], chunk.rows[:3], strict=True)) and np.array_equal(back.numeric, chunk.numeric)


def test_count_buckets_are_exact_and_about_a_tenth_wide() -> None:
    edges = nb.bucket_edges()
    # ceil(1.1^k) by integer arithmetic: 1.1^25 = 10.83..., 1.1^26 = 11.91..., 1.1^27 = 13.1...
    assert edges[:13].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14]
    assert np.all(np.diff(edges) > 0) and edges[-1] >= 1 << 62
    b = nb.count_buckets(np.array([0, 1, 2, 9, 10, 12, 13, 14, 100, 105, 111, 1000, 1100]))
    assert b[0] == 0 and len(set(b[:6].tolist())) == 6  # none, and each count below ten, alone
    assert b[5] == b[6] != b[7]  # 12 and 13 share; 14 starts the next
    assert b[8] == b[9] != b[10] and b[11] != b[12]  # within about a tenth, and not beyond
    big = np.array([2**40, 2**40 + 1, 2**62 - 1])
    assert np.all(np.diff(nb.count_buckets(big)[:2]) == 0) and nb.count_buckets(big)[2] < len(edges) + 1


def test_each_event_model_counts_duplicates_from_its_own_threshold() -> None:
    """Fisher groups tokens from 7 messages on; the linear models from DUPLICATE_MIN (10)."""
    assert events.event_model("fisher").duplicate_min == 7
    assert events.event_model("multinomial").duplicate_min == events.event_model("bernoulli").duplicate_min == nb.DUPLICATE_MIN == 10
    df = np.array([[0, 0, 5], [8, 8, 1]])  # columns 0 and 1: the same 8 spam messages
    counts = nb.Counts(docs=np.array([20, 20]), tf=df.copy(), df=df)
    one, two = np.array([[1.0, 0, 1]]), np.array([[1.0, 1, 1]])
    fisher, multinomial = events.event_model("fisher"), events.event_model("multinomial")
    assert log_odds(fisher, counts, two) == pytest.approx(log_odds(fisher, counts, one), abs=1e-12)
    assert log_odds(multinomial, counts, two) > log_odds(multinomial, counts, one)


def test_duplicate_keys_join_tokens_whose_counts_agree_within_a_tenth() -> None:
    df = np.array(
        [
            [0, 0, 0, 0, 0, 1, 3, 3],
            [100, 105, 111, 5, 5, 100, 3, 3],
        ]
    )
    counts = nb.Counts(np.array([50, 200]), df, df)
    keys = nb.duplicate_keys(counts)
    assert keys[0] == keys[1]  # (0, 100) and (0, 105): one source
    assert keys[2] != keys[0]  # (0, 111) is further than a tenth from (0, 100)
    assert keys[5] != keys[0]  # seen in one ham is not seen in none
    assert np.all(keys[3:5] == -1) and np.all(keys[6:] == -1)  # fewer than DUPLICATE_MIN messages: each alone
    assert nb.duplicate_keys(counts, least=5)[3] == nb.duplicate_keys(counts, least=5)[4]
    assert np.all(nb.duplicate_keys(counts, least=0) == -1)
    # A subset of the columns (the one-message path) groups them as the whole table does.
    cols = np.array([1, 5, 0])
    sub = nb.duplicate_keys(counts, cols)
    assert sub[0] == sub[2] != sub[1]


def with_unknown_columns(model: nb.EventModel, table: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The flat entries' columns with each unknown entry (-1) given a column of its own past
    the table, and the table extended by the event model's `unknown_row` for those."""
    unknown = cols < 0
    cols = cols.copy()
    cols[unknown] = len(table) + np.arange(int(unknown.sum()))
    extra = np.broadcast_to(model.unknown_row(), (int(unknown.sum()), *table.shape[1:]))
    return cols, np.concatenate((table, extra))


def dense_sums(model: nb.EventModel, table: np.ndarray, X: np.ndarray, keys: np.ndarray | None = None) -> np.ndarray:
    """Each row's sum of table rows, by dense algebra: prepare(X) @ table, tokens sharing a
    duplicate key in a row counted 1/k each."""
    x = np.asarray(model.prepare(np.asarray(X, dtype=np.float64)), dtype=np.float64)
    if keys is not None:
        for row in x:
            present = np.flatnonzero(row)
            for key in set(keys[present]) - {-1}:
                group = present[keys[present] == key]
                row[group] /= len(group)
    return x @ table


@settings(max_examples=60, deadline=None)
@given(TOKEN_LISTS, st.sampled_from(sorted(events.EVENT_MODELS)), st.integers(0, 3))
def test_scoring_is_the_dense_algebra_and_does_not_depend_on_the_chunking(token_lists: list[list[str]], event: str, seed: int) -> None:
    """EventModel.log_odds, the one scoring path: the event model's combining of the dense
    product; tokens the vocabulary lacks score as columns of `unknown_row`; duplicate keys
    count a group once; each message scores bit for bit as in any batch."""
    X, y = random_counts(seed, v=5)
    model = events.event_model(event)
    df = np.array([[1, 0, 1, 2, 0], [2, 3, 2, 0, 3]])  # f and a share (1, 2), c and e-e (0, 3)
    for counts, least in ((counts_of(X, y), 0), (nb.Counts(np.array([3, 3]), df * 2, df), 1)):
        keys = nb.duplicate_keys(counts, least=least)
        table, b = model.table(counts)
        chunk = local_rows(token_lists)
        cols = np.asarray(Vocabulary(["f", "c", "a", "ü", "e-e"]).lookup(chunk.tokens), dtype=np.int64)[chunk.rows.cols]
        rows = chunk.rows._replace(cols=cols)
        got = model.log_odds(table, b, rows, keys)
        wide_cols, wide_table = with_unknown_columns(model, table, cols)
        wide_keys = np.concatenate((keys, np.full(len(wide_table) - len(keys), -1)))
        dense = Rows(wide_cols, rows.counts, rows.lengths)
        X_dense = np.zeros((len(rows.lengths), len(wide_table)))
        X_dense[np.repeat(np.arange(len(rows.lengths)), rows.lengths), wide_cols] = rows.counts
        sums = dense_sums(model, wide_table, X_dense, wide_keys)
        want = model.chi_square(sums, b) if event == "fisher" else sums + b
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(model.log_odds(wide_table, b, dense, wide_keys), got, rtol=1e-12, atol=1e-12)
        for i in range(len(rows.lengths)):
            assert model.log_odds(table, b, rows.take(np.array([i])), keys)[0] == got[i]
        # One field for all is no fields (Fisher); a linear model ignores fields.
        one_field = model.log_odds(table, b, rows._replace(fields=np.zeros_like(cols)), keys)
        np.testing.assert_allclose(one_field, got, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("event", ["fisher", "multinomial"])
def test_fisher_leaves_out_a_list_servers_fields(event: str) -> None:
    """A message scores as without its list server's fields under Fisher (classify and
    explain alike), though the model learnt them; a linear model counts them."""
    model = Model(scoring=Scoring(event=event))
    listed = [Message(f"list{i}", make_mail("agenda", "meeting notes", headers=LIST_SERVER_FIELDS), "ham") for i in range(3)]
    classifier.learn(model, [*labelled_messages(10, seed=11), *listed])
    assert model.vocab.lookup(["list-id:talk.lists.example.org"]) != [-1]
    bare = make_mail("cheap pills", "winner prize meeting")
    with_fields = make_mail("cheap pills", "winner prize meeting", headers=LIST_SERVER_FIELDS)
    scored = [s.log_odds for s in classifier.classify(model, [Message("a", bare), Message("b", with_fields)])]
    explained = [model.explain(Tokenizer(model.tokens)(m)).log_odds for m in (bare, with_fields)]
    np.testing.assert_allclose(explained, scored, rtol=1e-9, atol=1e-9)
    if event == "fisher":
        assert scored[0] == pytest.approx(scored[1], abs=1e-12)
        e = model.explain(Tokenizer(model.tokens)(with_fields))
        assert all(c == 0 for t, c in zip(e.tokens, e.contributions, strict=True) if t.startswith("list-"))
    else:
        assert scored[1] < scored[0] - 0.1  # learnt from ham only


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_fisher_scores_messages_bit_for_bit_as_without_their_uncounted_entries(seed: int) -> None:
    """The entries scoring does not count (a list server's fields, field -1), known to the
    model or not, are left out to the bit: the log-odds of the messages without them."""
    rng = np.random.default_rng(seed)
    X, y = random_counts(seed % 4, v=30)
    counts = counts_of(X, y)
    model = events.Fisher()
    table, b = model.table(counts)
    keys = nb.duplicate_keys(counts, least=1)
    messages = [np.concatenate((rng.permutation(30)[: rng.integers(0, 12)], np.full(rng.integers(0, 3), -1))) for _ in range(rng.integers(1, 9))]
    cols = np.concatenate(messages).astype(np.int64)
    rows = Rows(cols, rng.integers(1, 4, len(cols)), np.array([len(m) for m in messages]), rng.integers(-1, 3, len(cols)))
    kept = rows.fields >= 0
    row_of = np.repeat(np.arange(len(rows.lengths)), rows.lengths)
    without = Rows(cols[kept], rows.counts[kept], np.bincount(row_of[kept], minlength=len(rows.lengths)), rows.fields[kept])
    assert model.log_odds(table, b, rows, keys).tobytes() == model.log_odds(table, b, without, keys).tobytes()


@pytest.mark.parametrize("wide", [False, True])  # a batch's columns ranked in 16 bits; too many for that
@pytest.mark.parametrize("event", sorted(events.EVENT_MODELS))
@pytest.mark.parametrize("seed", [0, 1])
def test_messages_score_to_the_bit_whatever_the_order_of_their_entries(seed: int, event: str, wide: bool) -> None:
    """Each message's entries in any order (the calibration's sampled messages keep their
    tokens' first sight) score bit for bit as in column order (batch classify's): with
    fields, unknown tokens, duplicate shares and a weighting."""
    rng = np.random.default_rng(seed)
    v, n, size = (70_000, 70, 1_000) if wide else (300, 40, 60)
    weighting = nb.Weighting("log", True, "l2") if event in ("multinomial", "complement") else nb.UNWEIGHTED
    model = events.event_model(event, weighting=weighting)
    learnt = [rng.permutation(v)[: rng.integers(1, 200)] for _ in range(4 * v // 100)]
    counts = nb.Counts.empty(v, weighting)
    cols = np.concatenate(learnt)
    counts.add(Rows(cols, rng.integers(1, 5, len(cols)), np.array([len(m) for m in learnt])), np.arange(len(learnt)) % 2)
    table, b = model.table(counts)
    keys = nb.duplicate_keys(counts, least=1)
    # Each message's distinct columns (wide: a permutation of the vocabulary cut up), and a few unknown.
    taken = rng.permutation(v)[: n * size].reshape(n, size) if wide else [rng.permutation(v)[:size] for _ in range(n)]
    messages = [np.concatenate((m, np.full(rng.integers(0, 4), -1))) for m in taken]
    cols = np.concatenate(messages)
    row_of = np.repeat(np.arange(n), [len(m) for m in messages])
    rows = Rows(cols, rng.integers(1, 5, len(cols)), np.bincount(row_of, minlength=n), rng.integers(-1, 3, len(cols)))
    ordered, shuffled = np.lexsort((cols, row_of)), np.lexsort((rng.random(len(cols)), row_of))
    in_order, any_order = (model.log_odds(table, b, Rows(*(a[o] for a in rows[:2]), rows.lengths, rows.fields[o]), keys) for o in (ordered, shuffled))
    assert in_order.tobytes() == any_order.tobytes()
    # The data tells orders apart: summed in the shuffled order, some message's sum differs.
    sums = [np.bincount(row_of[o], weights=table.take(np.maximum(cols[o], 0), axis=0).reshape(len(cols), -1)[:, 0], minlength=n) for o in (ordered, shuffled)]
    assert sums[0].tobytes() != sums[1].tobytes()


@settings(max_examples=40, deadline=None)
@given(TOKEN_LISTS, st.integers(0, 3))
def test_fisher_by_field_is_the_same_however_the_fields_are_numbered(token_lists: list[list[str]], seed: int) -> None:
    """Only which tokens share a field counts: ids far apart (per (row, field) groups by a
    sort, not a count per possible slot) or shuffled give the same log-odds."""
    X, y = random_counts(seed, v=5)
    model = events.Fisher()
    table, b = model.table(counts_of(X, y))
    chunk = local_rows(token_lists)
    rows = chunk.rows
    cols = np.asarray(Vocabulary(["f", "c", "a", "ü", "e-e"]).lookup(chunk.tokens), dtype=np.int64)[rows.cols]
    fields = np.array([len(t) % 3 for t in chunk.tokens], dtype=np.int64)[rows.cols]  # three fields by token length
    want = model.log_odds(table, b, Rows(cols, rows.counts, rows.lengths, fields))
    for renumbered in (fields * 100_000 + 7, (2 - fields) * 3):
        np.testing.assert_allclose(model.log_odds(table, b, Rows(cols, rows.counts, rows.lengths, renumbered)), want, rtol=1e-12, atol=1e-12)


def test_fisher_counts_each_field_as_tests_apart() -> None:
    """Fisher: each field's t tokens count as tests(t) tests, their sums scaled by tests(t) / t;
    a linear event model ignores fields."""
    f = np.array([0.9, 0.8, 0.95, 0.7, 0.2, 0.6])  # six tokens' f(w) in one message
    table = np.column_stack([np.log(f), np.log1p(-f), np.ones(6)])
    fields = np.array([0, 0, 0, 0, 1, 1])  # four of one field, two of another
    model = events.Fisher()
    X = np.ones((1, 6))
    plain = table.sum(axis=0)
    tests4, tests2 = model.tests(np.array([4.0, 2.0]))
    assert (tests4, tests2) == (np.rint(4**0.8), np.rint(2**0.8)) == (3.0, 2.0)
    scaled = table[:4].sum(axis=0) * tests4 / 4 + table[4:].sum(axis=0) * tests2 / 2
    assert scaled[2] == pytest.approx(5.0)  # 3 + 2 tests, against rint(6 ** 0.8) = 4 as one field
    want = model.chi_square(plain[None, :], 0.3, scaled[None, :])
    got = model.log_odds(table, 0.3, rows_of(X, fields))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not np.allclose(got, model.log_odds(table, 0.3, rows_of(X)))  # one field: 4 tests
    np.testing.assert_allclose(model.log_odds(table, 0.3, rows_of(X, np.zeros(6, np.int64))), model.log_odds(table, 0.3, rows_of(X)), rtol=1e-12)
    linear = events.Multinomial()
    w = np.linspace(-1, 1, 6)
    np.testing.assert_array_equal(linear.log_odds(w, 0.1, rows_of(X, fields)), linear.log_odds(w, 0.1, rows_of(X)))


@pytest.mark.parametrize("span", [40, 10**9])  # a count per value; a sort (too many values)
def test_group_sizes_count_equal_pairs_either_way(span: int) -> None:
    pairs = np.random.default_rng(4).integers(0, 40, size=200)
    counted = Counter(pairs.tolist())
    assert nb.group_sizes(pairs, span).tolist() == [counted[p] for p in pairs.tolist()]


def test_vocabulary_grow_numbers_new_tokens_in_order_of_first_sight() -> None:
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(50)]
    vocab = Vocabulary(words[:10], sorted_prefix=10)
    want = dict(zip(words[:10], range(10), strict=True))
    for _ in range(6):
        batch = [words[i] for i in rng.integers(0, 50, size=30)]  # repeats, old and new tokens
        for t in batch:
            want.setdefault(t, len(want))
        assert vocab.grow(batch).tolist() == [want[t] for t in batch]
        assert vocab.tokens == list(want)
    assert vocab.lookup(["w1", "nothing"]) == [1, -1] and vocab.tokens == list(want)  # a look-up adds nothing
    with pytest.raises(TypeError):
        vocab.grow(["fresh", ["unhashable"], "later"])  # type: ignore[list-item]
    assert vocab.tokens == [*want, "fresh"] and vocab.lookup(["fresh", "later"]) == [len(want), -1]  # still in step


def test_vocabulary_sorted_order_merges_new_tokens_into_a_sorted_prefix() -> None:
    vocab = Vocabulary(["apple", "kiwi", "pear"], sorted_prefix=3)
    vocab.grow(["zebra", "banana", "aardvark", "kiwi"])
    order = vocab.sorted_order()
    assert [vocab.tokens[i] for i in order] == sorted(vocab.tokens)
    blob, blob_order = vocab.sorted_blob()
    assert blob == "\n".join(sorted(vocab.tokens)).encode() and blob_order.tolist() == order.tolist()


def test_vocabulary_sorts_tokens_tied_on_their_first_bytes_in_many_runs_at_once() -> None:
    """Header fields' names begin many tokens: the sort's later rounds each hold many runs
    of tokens that share their first bytes, each run sorted apart."""
    rng = np.random.default_rng(5)
    heads = ["received:from", "subject:", "message-id:<", "url:www.", "rcvd-host:mail"]
    tokens = list(dict.fromkeys(h + "".join(rng.choice(list("az09.-é"), rng.integers(0, 20))) for h in heads for _ in range(300)))
    rng.shuffle(tokens)
    vocab = Vocabulary(tokens)
    blob, order = vocab.sorted_blob()
    assert [vocab.tokens[i] for i in order] == sorted(tokens)
    assert blob == "\n".join(sorted(tokens)).encode()
    pairs = [f"{i:07d}{last}" for i in range(70_000) for last in "ba"]  # more runs than 16 bits number
    blob, order = Vocabulary(pairs).sorted_blob()
    assert blob == "\n".join(sorted(pairs)).encode() and order[:4].tolist() == [1, 0, 3, 2]


# Tokens that share long beginnings (the sort compares a few bytes at a time), and any
# code points but the separator: NUL, the surrogates a token may hold, past the BMP.
SORTED_TOKEN = st.one_of(
    st.text(st.sampled_from(["a", "b", "\x00", "\x7f", "\x80", "é", "\u0800", "\ud800", "\udfff", "\uffff", "\U0001f600"]), max_size=24),
    st.text(st.characters(exclude_characters="\n", exclude_categories=()), max_size=12),
)


@settings(max_examples=300)
@given(st.lists(SORTED_TOKEN, unique=True, max_size=60), st.data())
def test_vocabulary_sorts_its_tokens_as_sorted_does(tokens: list[str], data: st.DataObject) -> None:
    prefix = data.draw(st.integers(0, len(tokens)))
    vocab = Vocabulary(sorted(tokens[:prefix]), sorted_prefix=prefix)
    vocab.grow(tokens[prefix:])
    blob, order = vocab.sorted_blob()
    assert [vocab.tokens[i] for i in order] == sorted(tokens)
    assert blob == "\n".join(sorted(tokens)).encode("utf-8", "surrogatepass")


def trained_model(event: str, alpha: float) -> Model:
    model = Model(scoring=Scoring(event=event, alpha=alpha))
    classifier.learn(model, labelled_messages(10, seed=11))
    return model


UNSEEN = [
    make_mail("cheap pills", "winner winner prize meeting unknownword"),
    make_mail("agenda", "project review tuesday, budget draft"),
    make_mail("nothing known", "zzzz qqqq"),
]


@pytest.mark.parametrize(("event", "alpha"), [("multinomial", 1.0), ("bernoulli", 0.5), ("multinomial", 0.01), ("fisher", 0.01), ("fisher", 1.0)])
def test_explain_equals_batch_scoring(event: str, alpha: float, tmp_path: Path) -> None:
    model = trained_model(event, alpha)
    path = str(tmp_path / "model.npz")
    store.save(model, path)
    loaded = store.load(path)  # a sorted-token vocabulary: the one-message path
    tokenize = Tokenizer(model.tokens)
    explained = [loaded.explain(tokenize(m)).log_odds for m in UNSEEN]
    batch = [s.log_odds for s in classifier.classify(model, [Message(str(i), m) for i, m in enumerate(UNSEEN)])]
    from_dict_vocab = [model.explain(tokenize(m)).log_odds for m in UNSEEN]
    np.testing.assert_allclose(explained, batch, rtol=0, atol=1e-9)
    np.testing.assert_allclose(from_dict_vocab, batch, rtol=0, atol=1e-9)
    assert batch[0] > 0 > batch[1]


@pytest.mark.parametrize("event", ["multinomial", "bernoulli"])
def test_batch_scoring_equals_the_joint_log_likelihood(event: str) -> None:
    model = trained_model(event, 1.0)
    vocab = model.growable()
    tokenize = Tokenizer(model.tokens)
    X = count_rows([vocab.lookup(tokenize(m)) for m in UNSEEN], len(vocab))
    event = model.scoring.event_model()
    jll = joint_log_likelihood(event, model.counts, X)
    # Less the duplicate evidence rule's surplus: tokens sharing a key in a message count
    # once between them (at DUPLICATE_MIN 7 some of this small model's tokens do).
    coo = X.tocoo()
    rows, cols, values = coo.row, coo.col, coo.data
    shares = nb.duplicate_shares(rows, cols, nb.duplicate_keys(model.counts))
    w, _ = model.weights()
    surplus = np.bincount(rows, weights=(1 - shares) * np.asarray(event.prepare(values), dtype=np.float64) * w[cols], minlength=X.shape[0])
    expected = jll[:, 1] - jll[:, 0] - surplus
    scored = list(classifier.classify(model, [Message(str(i), m) for i, m in enumerate(UNSEEN)]))
    np.testing.assert_allclose([s.log_odds for s in scored], expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose([s.score for s in scored], 1 / (1 + np.exp(-expected)), rtol=1e-12)


def test_fisher_counts_unknown_tokens_as_neutral_evidence() -> None:
    """Each distinct unknown token adds (ln x, ln(1 - x), 1): the same as a seen token with f = x."""
    model = trained_model("fisher", 0.01)
    tokenize = Tokenizer(model.tokens)
    known = make_mail("cheap pills", "winner winner prize lottery")
    diluted = make_mail("cheap pills", "winner winner prize lottery zzqa zzqb zzqc zzqd zzqc")
    e_known, e_diluted = model.explain(tokenize(known)), model.explain(tokenize(diluted))
    assert e_diluted.unknown >= e_known.unknown + 4  # the new words (zzqc twice counts once) and their n-grams
    assert list(e_known.tokens) == list(e_diluted.tokens)
    # Neutral evidence makes the verdict less sure, never flips it.
    assert 0 < e_diluted.log_odds < e_known.log_odds
    # Each unknown token is f = x = 1/2 in its field: by hand, as one more known token of f = 1/2.
    tokens = tokenize(diluted)
    table, b = model.table(e_known.cols)
    keys = nb.duplicate_keys(model.counts, e_known.cols, model.scoring.event_model().duplicate_min)
    half = [t for t in dict.fromkeys(tokens) if t not in set(e_known.tokens)]
    wide = np.concatenate((table, np.tile([np.log(0.5), np.log(0.5), 1.0], (len(half), 1))))
    fields = field_ids([*e_known.tokens, *half])
    by_hand = events.Fisher().log_odds(wide, b, rows_of(np.ones((1, len(wide))), fields), np.concatenate((keys, np.full(len(half), -1))))
    assert e_diluted.log_odds == pytest.approx(float(by_hand[0]), abs=1e-12)
    # Batch classify scores it the same.
    scored = next(classifier.classify(model, [Message("m", diluted)]))
    assert scored.log_odds == pytest.approx(e_diluted.log_odds, abs=1e-9)
    # A message of unknown tokens only is exactly undecided.
    assert model.explain(tokenize(b"Subject: zzqa\n\nzzqb zzqc\n")).log_odds == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("event", ["multinomial", "bernoulli", "complement"])
def test_naive_bayes_leaves_unknown_tokens_out(event: str) -> None:
    model = trained_model(event, 1.0)
    tokenize = Tokenizer(model.tokens)
    a = model.explain(tokenize(make_mail("cheap pills", "winner prize")))
    b = model.explain(tokenize(make_mail("cheap pills", "winner prize zzqa zzqb")))
    assert b.unknown > a.unknown and a.log_odds == pytest.approx(b.log_odds, abs=1e-12)


def test_a_forgotten_token_scores_as_an_unknown_one() -> None:
    """A column whose counts went back to zero is no evidence, the same as no column."""
    model = trained_model("fisher", 0.01)
    extra = Message("extra", make_mail("zzforgot", "zzforgot cheap"), "spam")
    classifier.learn(model, [extra])
    classifier.learn(model, [extra], forget=True)
    vocab = model.growable()
    assert vocab.lookup(["zzforgot"]) != [-1]
    tokenize = Tokenizer(model.tokens)
    msgs = [make_mail("winner", "prize zzforgot"), make_mail("winner", "prize zzother")]
    batch = [s.log_odds for s in classifier.classify(model, [Message(str(i), m) for i, m in enumerate(msgs)])]
    assert batch[0] == pytest.approx(batch[1], abs=1e-12)
    assert model.explain(tokenize(msgs[0])).log_odds == pytest.approx(batch[0], abs=1e-12)


@pytest.mark.parametrize("event", sorted(events.EVENT_MODELS))
def test_cross_validation_scores_a_fold_as_a_model_trained_without_it(event: str) -> None:
    """Tokens only the held-out fold has are unknown to that fold's model, as they would be to `classify`."""
    messages = [
        *labelled_messages(12, seed=5),
        Message("odd-spam-1", make_mail("cheap", "winner zzonly1 zzonly2"), "spam"),
        Message("odd-ham-1", make_mail("agenda", "review zzonly3"), "ham"),
    ]
    scoring = Scoring(event=event)
    scored, _ = classifier.cross_validate(messages, 3, Model().tokens, scoring)
    by_id = {s.id: s.log_odds for s in scored}
    for fold in range(3):
        held = [m for m in messages if classifier.fold_of(m.id, 3) == fold]
        model = Model(scoring=scoring)
        classifier.learn(model, [m for m in messages if classifier.fold_of(m.id, 3) != fold])
        got = [s.log_odds for s in classifier.classify(model, held)]
        np.testing.assert_allclose(got, [by_id[m.id] for m in held], rtol=0, atol=1e-9)


@settings(max_examples=300, deadline=None)
@given(
    known=st.sets(st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), min_size=1, max_size=6), max_size=60),
    asked=st.lists(st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), min_size=1, max_size=6), max_size=30),
    landmarks=st.integers(1, 8),
)
def test_sorted_tokens_find_what_a_dictionary_finds(known: set[str], asked: list[str], landmarks: int) -> None:
    """The landmark-narrowed binary search over the blob finds each token's column, and -1 for the rest."""
    from spamnb.bayes.vocabulary import SortedTokens

    ordered = sorted(known, key=lambda t: t.encode())
    vocab = SortedTokens(b"\n".join(t.encode() for t in ordered))
    vocab.LANDMARKS = landmarks
    column = {t: i for i, t in enumerate(ordered)}
    queries = [*asked, *ordered]
    assert vocab.lookup(queries) == [column.get(t, -1) for t in queries]


@pytest.mark.parametrize("event", ["fisher", "multinomial"])
def test_cross_validation_with_a_train_size_scores_as_a_model_of_those_messages(event: str) -> None:
    """--train-size: each fold's model is `learn` on only the first N of the other folds'
    messages by file-name digest, spam then ham, each class in its share (peers.py's sample)."""
    messages = labelled_messages(150, seed=11)
    scoring = Scoring(event=event)
    scored, _ = classifier.cross_validate(messages, 3, Model().tokens, scoring, train_size=70)
    by_id = {s.id: (s.log_odds, s.score, s.verdict) for s in scored}
    digest = lambda m: hashlib.md5(os.path.basename(m.id).encode()).hexdigest()  # noqa: E731
    for fold in range(3):
        rest = [m for m in messages if classifier.fold_of(m.id, 3) != fold]
        n_spam = round(70 * sum(m.label == "spam" for m in rest) / len(rest))
        sample = [*sorted((m for m in rest if m.label == "spam"), key=digest)[:n_spam], *sorted((m for m in rest if m.label == "ham"), key=digest)[: 70 - n_spam]]
        model = Model(scoring=scoring)
        classifier.learn(model, sample)
        assert model.counts.docs.sum() == 70 and model.scoring.calibration != scoring.calibration
        held = [m for m in messages if classifier.fold_of(m.id, 3) == fold]
        for s in classifier.classify(model, held):
            lo, score, verdict = by_id[s.id]
            assert lo == pytest.approx(s.log_odds, abs=1e-9) and score == pytest.approx(s.score, abs=1e-9) and verdict == s.verdict


def test_first_by_digest_keeps_the_class_shares_and_takes_all_when_asked_for_more() -> None:
    y = np.array([1, 0, 0, 1, 0, 0, 0, 0])
    digests = ["f", "e", "d", "c", "b", "a", "9", "8"]
    rows = np.arange(8)
    assert list(classifier.first_by_digest(rows, y, digests, 4)) == [3, 7, 6, 5]  # 4 * 2/8 = 1 spam, the lowest digest first
    assert sorted(classifier.first_by_digest(rows, y, digests, 100)) == list(range(8))

"""The flat rows every scorer takes, and the renumbering of a fold's columns."""
from __future__ import annotations

import numpy as np

from spamnb.bayes import nb
from spamnb.bayes.vocabulary import Rows


def test_used_columns_renumber_in_column_order() -> None:
    cols = np.array([9, 2, 9, 5, 0, 2])
    used, local = nb.used_columns(cols, 12)
    assert used.tolist() == [0, 2, 5, 9]
    assert used[local].tolist() == cols.tolist()


def test_rows_take_picks_messages_in_order_with_repeats_and_empty_ones() -> None:
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 6, size=40)
    which = rng.integers(0, 40, size=70)
    starts = np.cumsum(lengths) - lengths
    want = [e for i in which for e in range(starts[i], starts[i] + lengths[i])]
    entries = np.arange(int(lengths.sum()))
    taken = Rows(entries, entries * 2, lengths, entries * 3).take(which)
    assert taken.cols.tolist() == want and taken.counts.tolist() == [2 * e for e in want] and taken.fields.tolist() == [3 * e for e in want]
    assert taken.lengths.tolist() == lengths[which].tolist()
    assert Rows(entries, entries, lengths).take(np.zeros(0, np.int64)).cols.tolist() == []


def test_a_model_vocabulary_keeps_its_columns_through_its_states() -> None:
    from spamnb.bayes.vocabulary import ModelVocabulary, SortedTokens

    vocab = ModelVocabulary(base=SortedTokens(b"apple\nkiwi\npear"))
    assert vocab.state == vocab.SORTED and vocab.lookup(["pear", "fig", "apple"]) == [2, -1, 0]
    assert vocab.sorted_blob() == (b"apple\nkiwi\npear", None)
    assert vocab.grow(["fig", "kiwi", "zucchini", "fig"]).tolist() == [3, 1, 4, 3] and vocab.state == vocab.GROWING
    assert len(vocab) == 5 and vocab.lookup(["zucchini", "plum"]) == [4, -1]
    blob, order = vocab.sorted_blob()
    assert blob == b"apple\nfig\nkiwi\npear\nzucchini" and order.tolist() == [0, 3, 1, 2, 4]
    assert vocab.dictionary().tokens == ["apple", "kiwi", "pear", "fig", "zucchini"] and vocab.state == vocab.DICTIONARY
    assert vocab.grow(["plum", "apple"]).tolist() == [5, 0] and vocab.sorted_blob()[1].tolist() == [0, 3, 1, 2, 5, 4]

"""The fast paths' command line (spamnb.pipe.argv): read as click reads it, or left to click."""
from __future__ import annotations

import pytest

from spamnb.pipe import learnone
from spamnb.pipe.argv import options_of

VALUED = ("-m", "--model", "--spam", "--ham")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "--spam", "a", "--ham=b", "-mM", "--spam", "c"], ([("--spam", "a"), ("--ham", "b"), ("--model", "M"), ("--spam", "c")], set())),
        (["-q", "--debug", "train", "--forget", "-m", "x"], ([("--model", "x")], {"--forget"})),
        # click reads `-m=x` as the value "=x" (only long options take `=`)
        (["train", "-m=x"], ([("--model", "=x")], set())),
        (["train", "--model"], None),  # a value missing: click's error
        (["train", "stray"], None),
        (["train", "--help"], None),
        (["classify", "--spam", "a"], None),
        (["--version"], None),
        ([], None),
    ],
)
def test_options_in_order_or_none(argv, expected):
    assert options_of(argv, "train", ("--forget",), VALUED) == expected


def test_a_single_learn_keeps_the_order_of_spam_and_ham():
    assert learnone.parse_args(["train", "--ham", "a", "--spam", "-", "--ham", "c", "--wait=2"]) == (None, [("ham", "a"), ("spam", "-"), ("ham", "c")], False, 2.0)
    assert learnone.parse_args(["train", "--spam", "-", "--wait", "-1"]) is None  # click says what is wrong

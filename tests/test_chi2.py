"""The vectorised chi-square tails (`chi2.log_chi2_tails`) give each row the floats it has alone,
whatever rows share its block: every verdict and calibration depends on them to the bit."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spamnb.bayes.chi2 import CHI2_BLOCK, log_chi2_tails


def row_by_row(chi: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's tails alone, by the float operations its block gives it: the terms, less
    their largest, through exp, added in order (what the blocks' padding must not change)."""
    lf = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, 4000, dtype=np.float64)))))

    def log_sum_exp(terms: np.ndarray) -> np.float64:
        top = terms.max()
        top = top if np.isfinite(top) else 0.0
        with np.errstate(divide="ignore"):
            return top + np.log(np.cumsum(np.exp(terms - top))[-1])

    log_q, log_p = np.zeros(len(chi)), np.full(len(chi), -np.inf)
    for row, (c, k) in enumerate(zip(chi, n.tolist(), strict=True)):
        if k == 0:
            continue
        m = np.maximum(c / 2.0, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_m = np.log(m)
            terms = np.arange(k) * log_m - lf[:k]
        terms[0] = 0.0
        log_q[row] = np.minimum(-m + log_sum_exp(terms), 0.0)
        with np.errstate(divide="ignore"):
            log_p[row] = np.log(-np.expm1(log_q[row]))
        if log_q[row] > np.log(0.5):
            j = k + np.arange(int(60 + 12 * np.sqrt(m + k)))
            tail = j * log_m - lf[j] if np.isfinite(log_m) else np.array([-np.inf])
            log_p[row] = -m + log_sum_exp(tail)
    return log_q, log_p


def same_floats(mine: np.ndarray, theirs: np.ndarray) -> bool:
    """The same bits (-0.0 is not 0.0), but for a NaN's sign, which the operations' order sets."""
    nan = np.isnan(mine)
    return bool((nan == np.isnan(theirs)).all()) and mine[~nan].tobytes() == theirs[~nan].tobytes()


# Any float the sums could hand over (subnormal, huge, infinite, not a number) and the
# sums' own range, more often.
CHIS = st.one_of(st.floats(width=64), st.floats(0, 6000), st.floats(0, 60))


@settings(max_examples=400, deadline=None)
@given(
    chi=st.lists(CHIS, min_size=1, max_size=40),
    n=st.lists(st.integers(0, 1800), min_size=40, max_size=40),
    block=st.sampled_from([CHI2_BLOCK, 2000, 300, 1]),
)
def test_chi2_tails_are_each_rows_alone_to_the_bit(chi: list[float], n: list[int], block: int) -> None:
    chi_a = np.array(chi)
    n_a = np.array(n[: len(chi)], dtype=np.int64)
    with np.errstate(invalid="ignore"):  # chi = inf: -inf + inf, in both
        ours = log_chi2_tails(chi_a, n_a, block)
        alone = row_by_row(chi_a, n_a)
    for mine, theirs in zip(ours, alone, strict=True):
        assert same_floats(mine, theirs)


def test_chi2_tails_of_the_sums_range_are_each_rows_alone_to_the_bit() -> None:
    # Many rows of realistic sizes (blocks of many rows, widths up to the largest messages').
    rng = np.random.default_rng(7)
    n = rng.integers(0, 1800, 3000)
    chi = rng.uniform(0, 8, 3000) * n
    chi[::97] = 0.0
    for mine, theirs in zip(log_chi2_tails(chi, n), row_by_row(chi, n), strict=True):
        assert same_floats(mine, theirs)

"""The vectorised chi-square tails (`chi2.log_chi2_tails`) give the floats they gave before
their blocks ran down columns: every verdict and calibration depends on them to the bit."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spamnb.bayes.chi2 import CHI2_BLOCK, log_chi2_tails


def previous_log_chi2_tails(chi: np.ndarray, n: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """`log_chi2_tails` as main 4bcfddc had it: blocks of (row, term), -inf padding through
    exp, each row summed by its running sum."""

    def log_factorials(k: int) -> np.ndarray:
        return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, max(k, 1) + 1, dtype=np.float64)))))

    def logsumexp_rows(terms: np.ndarray) -> np.ndarray:
        top = terms.max(axis=1)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return top + np.log(np.cumsum(np.exp(terms - top[:, None]), axis=1)[:, -1])

    log_q, log_p = np.zeros(chi.shape), np.full(chi.shape, -np.inf)
    m = np.maximum(chi / 2.0, 0.0)
    with np.errstate(divide="ignore"):
        log_m = np.log(m)
    order = np.argsort(n, kind="stable")
    start = 0
    while start < len(order):
        stop = start + 1
        while stop < len(order) and (stop - start + 1) * (int(n[order[stop]]) + 1) <= block:
            stop += 1
        rows = order[start:stop]
        start = stop
        nr, mr, lm = n[rows], m[rows], log_m[rows]
        width = int(nr.max())
        if width == 0:
            continue
        i = np.arange(width)
        lf = log_factorials(width)
        with np.errstate(invalid="ignore"):
            terms = np.where(i[None, :] < nr[:, None], i[None, :] * lm[:, None] - lf[:width][None, :], -np.inf)
        terms[:, 0] = 0.0
        lq = np.minimum(-mr + logsumexp_rows(terms), 0.0)
        lq[nr == 0] = 0.0
        log_q[rows] = lq
        with np.errstate(divide="ignore"):
            lp = np.log(-np.expm1(lq))
        small = (lq > np.log(0.5)) & (nr > 0)
        if small.any():
            ns, ms, lms = nr[small], mr[small], lm[small]
            extra = (60 + 12 * np.sqrt(ms + ns)).astype(np.int64)
            j = ns[:, None] + np.arange(int(extra.max()))[None, :]
            lfj = log_factorials(int(j.max()))
            with np.errstate(invalid="ignore"):
                tail = np.where(np.isfinite(lms)[:, None] & (j < (ns + extra)[:, None]), j * lms[:, None] - lfj[j], -np.inf)
            lp[small] = -ms + logsumexp_rows(tail)
        log_p[rows] = lp
    return log_q, log_p


# Any float the sums could hand over (subnormal, huge, infinite, not a number) and the
# sums' own range, more often.
CHIS = st.one_of(st.floats(width=64), st.floats(0, 6000), st.floats(0, 60))


@settings(max_examples=400, deadline=None)
@given(
    chi=st.lists(CHIS, min_size=1, max_size=40),
    n=st.lists(st.integers(0, 900), min_size=40, max_size=40),
    block=st.sampled_from([CHI2_BLOCK, 2000, 300, 1]),
)
def test_chi2_tails_are_the_previous_formulas_to_the_bit(chi: list[float], n: list[int], block: int) -> None:
    chi_a = np.array(chi)
    n_a = np.array(n[: len(chi)], dtype=np.int64)
    with np.errstate(invalid="ignore"):  # chi = inf: -inf + inf, in both
        ours = log_chi2_tails(chi_a, n_a, block)
        before = previous_log_chi2_tails(chi_a, n_a, block)
    for mine, theirs in zip(ours, before, strict=True):
        assert mine.tobytes() == theirs.tobytes()


def test_chi2_tails_of_the_sums_range_are_the_previous_formulas_to_the_bit() -> None:
    # Many rows of realistic sizes (blocks of many rows, widths up to the largest messages').
    rng = np.random.default_rng(7)
    n = rng.integers(0, 1800, 3000)
    chi = rng.uniform(0, 8, 3000) * n
    chi[::97] = 0.0
    for mine, theirs in zip(log_chi2_tails(chi, n), previous_log_chi2_tails(chi, n, CHI2_BLOCK), strict=True):
        assert mine.tobytes() == theirs.tobytes()

"""Tails of the chi-square distribution with even degrees of freedom, in logs, over arrays:
`formulas.log_chi2_tails` (what Fisher's method of combining needs, far into both tails)
vectorised for batches, held equal to it by tests."""
from __future__ import annotations

import numpy as np


def _log_factorials(n: int) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, max(n, 1) + 1, dtype=np.float64)))))


def _logsumexp_rows(terms: np.ndarray) -> np.ndarray:
    top = terms.max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    # Summed in order (cumsum), not pairwise: then the -inf padding after a row's own terms
    # (blocks are as wide as their widest row) adds exact zeros at the end and cannot change
    # the sum, so a row's value does not depend on which rows share its chunk or block.
    with np.errstate(divide="ignore"):
        return top + np.log(np.cumsum(np.exp(terms - top[:, None]), axis=1)[:, -1])


# Terms per block of rows: a block is as wide as its largest n, so large blocks are mostly
# padding, and small ones many numpy calls.
CHI2_BLOCK = 1 << 14


def log_chi2_tails(chi: np.ndarray, n: np.ndarray, block: int = CHI2_BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """`formulas.log_chi2_tails` of each chi with its n, in blocks of rows of similar n."""
    chi = np.asarray(chi, dtype=np.float64)
    n = np.asarray(n, dtype=np.int64)
    log_q = np.zeros(chi.shape)
    log_p = np.full(chi.shape, -np.inf)
    if chi.size == 0:
        return log_q, log_p
    m = np.maximum(chi / 2.0, 0.0)
    with np.errstate(divide="ignore"):
        log_m = np.log(m)
    order = np.argsort(n, kind="stable")
    start = 0
    while start < len(order):
        # rows of similar n together, so that the (rows x terms) block stays small
        width = int(n[order[start]]) + 1
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
        lf = _log_factorials(width)
        with np.errstate(invalid="ignore"):
            terms = np.where(i[None, :] < nr[:, None], i[None, :] * lm[:, None] - lf[:width][None, :], -np.inf)
        terms[:, 0] = 0.0  # m^0 / 0! = 1, even when m = 0
        lq = np.minimum(-mr + _logsumexp_rows(terms), 0.0)
        lq[nr == 0] = 0.0
        log_q[rows] = lq
        with np.errstate(divide="ignore"):
            lp = np.log(-np.expm1(lq))
        small = (lq > np.log(0.5)) & (nr > 0)
        if small.any():
            ns, ms, lms = nr[small], mr[small], lm[small]
            # Each row's own number of terms, so that it does not depend on the rest of its block.
            extra = (60 + 12 * np.sqrt(ms + ns)).astype(np.int64)
            j = ns[:, None] + np.arange(int(extra.max()))[None, :]
            lfj = _log_factorials(int(j.max()))
            with np.errstate(invalid="ignore"):
                tail = np.where(np.isfinite(lms)[:, None] & (j < (ns + extra)[:, None]), j * lms[:, None] - lfj[j], -np.inf)
            lp[small] = -ms + _logsumexp_rows(tail)
        log_p[rows] = lp
    return log_q, log_p

"""Tails of the chi-square distribution with even degrees of freedom, in logs, over arrays:
`formulas.log_chi2_tails` (what Fisher's method of combining needs, far into both tails)
vectorised for batches, held equal to it by tests."""
from __future__ import annotations

import numpy as np

# ln 0!, ln 1!, ...: summed in order, so a longer table begins with every shorter one.
_LOG_FACTORIALS = np.zeros(1)


def _log_factorials(n: int) -> np.ndarray:
    """ln 0!, ..., ln n! (and maybe more): one table, grown as asked (doubled, so rarely)."""
    global _LOG_FACTORIALS
    lf = _LOG_FACTORIALS
    if len(lf) <= n:
        size = max(n, 2 * len(lf))
        lf = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, size + 1, dtype=np.float64)))))
        lf.flags.writeable = False
        _LOG_FACTORIALS = lf
    return lf


def _sums_down(e: np.ndarray) -> np.ndarray:
    """Each column's sum, added down the column in order: then the -inf padding below a
    row's own terms (a block is as tall as its tallest column) adds exact zeros at the end
    and cannot change the sum, so a row's value does not depend on which rows share its
    block.  numpy's reduce along the outer axis adds whole rows in order; a single
    column it would sum pairwise, so that one is summed by its running sum."""
    if e.shape[1] == 1:
        return np.cumsum(e[:, 0])[-1:]
    return np.add.reduce(e, axis=0)


def _logsumexp_columns(terms: np.ndarray) -> np.ndarray:
    """log sum exp down each column of `terms` (overwritten)."""
    top = terms.max(axis=0)
    top = np.where(np.isfinite(top), top, 0.0)
    terms -= top
    # exp(-inf) is 0 without asking: numpy's vector exp takes a slow path for each such lane.
    e = np.zeros_like(terms)
    np.exp(terms, out=e, where=terms != -np.inf)
    with np.errstate(divide="ignore"):
        return top + np.log(_sums_down(e))


# Terms per block of rows: a block is as wide as its largest n, so large blocks are mostly
# padding, and small ones many numpy calls.
CHI2_BLOCK = 1 << 14


def log_chi2_tails(chi: np.ndarray, n: np.ndarray, block: int = CHI2_BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """`formulas.log_chi2_tails` of each chi with its n, in blocks of rows of similar n.

    A block's terms are laid out (term, row): each row's terms run down a column."""
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
    widths = (n[order] + 1).tolist()
    start = 0
    while start < len(order):
        # rows of similar n together, so that the (terms x rows) block stays small
        stop = start + 1
        while stop < len(order) and (stop - start + 1) * widths[stop] <= block:
            stop += 1
        rows = order[start:stop]
        start = stop
        nr, mr, lm = n[rows], m[rows], log_m[rows]
        width = int(nr[-1])  # the rows come in order of n
        if width == 0:
            continue
        i = np.arange(width, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            terms = np.multiply.outer(i, lm)
        terms -= _log_factorials(width)[:width, None]
        np.copyto(terms, -np.inf, where=i[:, None] >= nr)
        terms[0] = 0.0  # m^0 / 0! = 1, even when m = 0
        lq = np.minimum(-mr + _logsumexp_columns(terms), 0.0)
        lq[nr == 0] = 0.0
        log_q[rows] = lq
        with np.errstate(divide="ignore"):
            lp = np.log(-np.expm1(lq))
        small = (lq > np.log(0.5)) & (nr > 0)
        if small.any():
            ns, ms, lms = nr[small], mr[small], lm[small]
            # Each row's own number of terms, so that it does not depend on the rest of its block.
            extra = (60 + 12 * np.sqrt(ms + ns)).astype(np.int64)
            k = np.arange(int(extra.max()))
            j = k[:, None] + ns
            lfj = _log_factorials(int(j[-1].max()))
            with np.errstate(invalid="ignore"):
                tail = j * lms
            tail -= np.take(lfj, j)
            np.copyto(tail, -np.inf, where=(k[:, None] >= extra) | ~np.isfinite(lms))
            lp[small] = -ms + _logsumexp_columns(tail)
        log_p[rows] = lp
    return log_q, log_p

# C types for calibration.py's loops where setup.py compiles it (Cython reads this file
# beside the source); the source runs as it is where nothing was built.  `math` is C's
# libm inside: its exp, log1p, log, sqrt and isfinite are the functions Python's math
# module calls, so the fit is the same to the bit (tests/test_compiled.py).
import cython
from libc cimport math

@cython.locals(e=cython.double)
cpdef double probability(double logit)

@cython.locals(soft=cython.double)
cdef (double, double) log_sigmoids(double s)

cdef double log_add(double u, double v)

@cython.locals(gz=cython.double, g1=cython.double, hzz=cython.double, hz=cython.double, h1=cython.double, det=cython.double,
               zi=cython.double, ti=cython.double, s=cython.double, p=cython.double, log_p=cython.double, log_not_p=cython.double,
               in_q=cython.double, in_not_q=cython.double, g=cython.double, w=cython.double, i=cython.Py_ssize_t)
cdef (double, double) fisher_step(list z, list t, double a, double b, double log_outlier, double log_keep)

@cython.locals(total=cython.double, zi=cython.double, ti=cython.double, s=cython.double,
               log_p=cython.double, log_not_p=cython.double, log_q=cython.double, log_not_q=cython.double, i=cython.Py_ssize_t)
cdef double log_loss(list z, list t, double a, double b, double log_outlier, double log_keep)
cdef double NEG_INF

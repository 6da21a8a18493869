"""torch's numeric constants and build flags at the top of the namespace
(kiln.inf, kiln.pi, kiln.newaxis, kiln.has_lapack, ...)."""

import math

inf = math.inf
nan = math.nan
pi = math.pi
e = math.e
newaxis = None

has_lapack = True  # kiln.linalg's decompositions (OpenBLAS's LAPACK)
has_spectral = True  # kiln.fft (FFTW)
has_mkl = False
has_openmp = False  # kiln's threads are TBB's

__all__ = ["inf", "nan", "pi", "e", "newaxis", "has_lapack", "has_spectral", "has_mkl", "has_openmp"]

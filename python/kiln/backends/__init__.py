"""kiln.backends, as torch.backends: the switches training scripts set
(``cudnn.benchmark``, ``cuda.matmul.allow_tf32``, ``mkldnn.enabled``...). Each
module says which it honours; the others kiln has nothing to switch for, and
they are accepted and read back so programs run unchanged."""

from kiln.backends import cpu, cuda, cudnn, mkldnn, mps, openmp, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp", "opt_einsum"]

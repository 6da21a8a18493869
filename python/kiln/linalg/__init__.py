"""kiln.linalg, as torch.linalg: the norms (vector_norm, matrix_norm, norm);
matrix products are kiln.matmul and friends."""

from kiln._norms import linalg_norm as norm  # noqa: F401
from kiln._norms import matrix_norm, vector_norm  # noqa: F401

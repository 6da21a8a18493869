"""torch.sparse: kiln has no sparse layouts (Note [No sparse layouts], kiln/_layout.py).

Each of torch.sparse's functions is here under its name and raises NotImplementedError, so
code written for torch fails at the call with a message that says why.
"""

from kiln._layout import sparse_not_implemented

__all__ = ["addmm", "as_sparse_gradcheck", "log_softmax", "mm", "sampled_addmm", "softmax", "spdiags", "spsolve",
           "sum", "to_sparse_semi_structured"]

addmm = sparse_not_implemented("kiln.sparse.addmm")
as_sparse_gradcheck = sparse_not_implemented("kiln.sparse.as_sparse_gradcheck")
log_softmax = sparse_not_implemented("kiln.sparse.log_softmax")
mm = sparse_not_implemented("kiln.sparse.mm")
sampled_addmm = sparse_not_implemented("kiln.sparse.sampled_addmm")
softmax = sparse_not_implemented("kiln.sparse.softmax")
spdiags = sparse_not_implemented("kiln.sparse.spdiags")
spsolve = sparse_not_implemented("kiln.sparse.spsolve")
sum = sparse_not_implemented("kiln.sparse.sum")  # noqa: A001 - torch.sparse's name
to_sparse_semi_structured = sparse_not_implemented("kiln.sparse.to_sparse_semi_structured")

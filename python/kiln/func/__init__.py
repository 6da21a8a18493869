"""kiln.func: composable function transforms, as torch.func.

vmap runs the function per batch element and stacks the results; grad, vjp,
jvp, jacrev, jacfwd, hessian and linearize are built on kiln's reverse-mode
autograd (jvp/jacfwd by the double-vjp trick or by rows); they nest with each
other and with vmap (``vmap(grad(f), in_dims=(None, 0, 0))`` gives per-sample
gradients). functional_call runs a module with parameters and buffers given
as dicts. The files say, each, where kiln knowingly differs from torch.
"""

from kiln.func._common import wraps
from kiln.func._functional_call import functional_call, replace_all_batch_norm_modules_, stack_module_state
from kiln.func._grad import grad, grad_and_value, jvp, linearize, vjp
from kiln.func._jac import hessian, jacfwd, jacrev
from kiln.func._vmap import vmap

__all__ = [
    "vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize",
    "functional_call", "stack_module_state", "replace_all_batch_norm_modules_", "functionalize", "debug_unwrap",
]


def functionalize(func, *, remove: str = "mutations"):
    """Returns ``func`` unchanged in behaviour: kiln has no functionalization pass,
    and running the mutations eagerly gives the same results (torch's removes them)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. Valid options "
            "are:\n     remove='mutations': all inplace and out= operators will be removed from the program, and "
            "replaced with their out-of-place equivalents.\n     remove='mutations_and_views': In addition to the "
            "above, all aliasing operators {view} will be replaced with their non-aliasing counterparts, "
            "{view}_copy.\n")
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)

    return wraps(func, wrapped)


def debug_unwrap(tensor, *, recurse: bool = True):
    """The tensor itself: kiln's transforms hand functions ordinary tensors."""
    return tensor

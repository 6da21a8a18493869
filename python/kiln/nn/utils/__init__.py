"""kiln.nn.utils: gradient clipping, parameter/vector conversion, (rnn) packed sequences,
parametrize / parametrizations, weight_norm / spectral_norm, stateless.functional_call,
fusion, prune, memory-format conversion and skip_init, as torch.nn.utils."""

import warnings as _warnings

from kiln.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from kiln.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from kiln.nn.utils import rnn  # noqa: F401
from kiln.nn.utils import parametrize, parametrizations, stateless, fusion  # noqa: F401  (prune: import it, as torch)
from kiln.nn.utils.fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from kiln.nn.utils.init import skip_init
from kiln.nn.utils.memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from kiln.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from kiln.nn.utils.weight_norm import remove_weight_norm, weight_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of clip_grad_norm_ (warns FutureWarning, as torch)."""
    _warnings.warn("`kiln.nn.utils.clip_grad_norm` is now deprecated in favor of "
                   "`kiln.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "parametrizations", "parametrize", "remove_spectral_norm",
           "remove_weight_norm", "rnn", "skip_init", "spectral_norm", "stateless", "weight_norm"]

"""kiln.nn.utils: gradient clipping, parameter/vector conversion and (rnn) packed sequences, as torch.nn.utils."""

from kiln.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from kiln.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from kiln.nn.utils import rnn  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters"]

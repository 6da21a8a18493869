"""Small helpers the distribution classes share (kiln's own; torch spells each out per class)."""

from __future__ import annotations

import numbers

import kiln


def is_number(value) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, kiln.Tensor)


def batch_shape_of(originals, tensor):
    """``kiln.Size()`` when every original argument was a Python number, else ``tensor``'s shape."""
    if all(is_number(v) for v in originals):
        return kiln.Size()
    return tensor.size()


def expand_params(self, cls, batch_shape, names, _instance=None, event_shapes=None):
    """The body of most ``expand`` methods: a new instance of ``cls`` whose tensors ``names``
    (those set on ``self``) are expanded to ``batch_shape`` (+ each one's event shape)."""
    new = self._get_checked_instance(cls, _instance)
    batch_shape = kiln.Size(batch_shape)
    event_shapes = event_shapes or {}
    for name in names:
        if name in self.__dict__:
            extra = event_shapes.get(name, kiln.Size())
            setattr(new, name, self.__dict__[name].expand(batch_shape + extra))
    if "_param" in self.__dict__:
        for name in names:
            if name in new.__dict__ and self.__dict__[name] is self._param:
                new._param = new.__dict__[name]
    super(cls, new).__init__(batch_shape, getattr(self, "_event_shape", kiln.Size()), validate_args=False)
    new._validate_args = self._validate_args
    return new


def nan_like(x):
    return kiln.full_like(x, float("nan"))


def inf_like(x):
    return kiln.full_like(x, float("inf"))


def one_param_probs_logits(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")

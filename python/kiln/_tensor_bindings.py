"""The one place kiln.Tensor gets its Python-level methods and properties.

kiln.Tensor (kiln/_tensor.py) subclasses the C++ kiln._C.TensorBase, whose methods
are the generated op bindings. The methods torch has that kiln writes in Python live
in the topic modules (kiln/_complex.py, kiln/_statistics.py, ...); ``bind`` attaches
each of them to Tensor under its torch name, once: no name is set twice. (kiln.nn,
kiln.linalg and kiln.special attach their own few methods from kiln/__init__.py.)"""

from __future__ import annotations

from kiln import (
    _aliases,
    _comparison,
    _complex,
    _conversion,
    _dtypes,
    _hashing,
    _histogram,
    _indexing,
    _layout,
    _legacy_methods,
    _named_tuple_ops,
    _norms,
    _numeric,
    _pointwise,
    _predicates,
    _products,
    _random_sampling,
    _shape_composites,
    _statistics,
    _stft,
    _tensor_factories,
    _tensor_methods,
    _view_copies,
)


def _methods():
    """Tensor attribute name -> the function (or property) it is."""
    methods = {
        # conversions (kiln/_conversion.py)
        "to": _conversion.to, "cpu": _conversion.cpu, "type": _conversion.type,
        **_conversion.SHORTHAND_METHODS,
        # new_* factories (kiln/_tensor_factories.py)
        "new_empty": _tensor_factories.new_empty, "new_empty_strided": _tensor_factories.new_empty_strided,
        "new_zeros": _tensor_factories.new_zeros, "new_ones": _tensor_factories.new_ones,
        "new_full": _tensor_factories.new_full, "new_tensor": _tensor_factories.new_tensor,
        # named-tuple results (kiln/_named_tuple_ops.py)
        **_named_tuple_ops.METHODS,
        # aliases (kiln/_aliases.py): arccos, multiply_, ..., positive
        **_aliases.METHODS,
        # methods written in Python over the ops (kiln/_tensor_methods.py)
        "unfold": _tensor_methods.unfold, "sum_to_size": _tensor_methods.sum_to_size,
        "cumsum_": _tensor_methods.cumsum_, "cumprod_": _tensor_methods.cumprod_,
        "is_pinned": _tensor_methods.is_pinned, "pin_memory": _tensor_methods.pin_memory,
        "record_stream": _tensor_methods.record_stream,
        "index_copy_": _tensor_methods.index_copy_, "index_copy": _tensor_methods.index_copy,
        "put_": _tensor_methods.put_, "put": _tensor_methods.put,
        "hash_tensor": _hashing.hash_tensor, "nonzero_static": _indexing.nonzero_static,
        # queries with a function form (kiln/_predicates.py)
        "is_nonzero": _predicates.is_nonzero, "is_same_size": _predicates.tensor_is_same_size,
        "is_signed": _predicates.is_signed, "get_device": _predicates.get_device,
        "is_inference": _predicates.tensor_is_inference,
        # comparison and dtype queries
        "isclose": _comparison.isclose, "allclose": _comparison.allclose, "equal": _comparison.equal,
        "is_floating_point": _dtypes.is_floating_point,
        # shapes (kiln/_shape_composites.py)
        "argwhere": _shape_composites.argwhere, "tile": _shape_composites.tile,
        "diagflat": _shape_composites.diagflat, "hsplit": _shape_composites.hsplit,
        "vsplit": _shape_composites.vsplit, "dsplit": _shape_composites.dsplit,
        # indexing and scatter (kiln/_indexing.py)
        "scatter_reduce_": _indexing.scatter_reduce_, "index_reduce": _indexing.index_reduce,
        "index_reduce_": _indexing.index_reduce_, "fill_diagonal_": _indexing.fill_diagonal_,
        "diagonal_scatter": _indexing.diagonal_scatter, "select_scatter": _indexing.select_scatter,
        "slice_scatter": _indexing.slice_scatter,
        # view copies (kiln/_view_copies.py)
        "narrow_copy": _view_copies.narrow_copy, "unsafe_chunk": _view_copies.unsafe_chunk,
        "unsafe_split": _view_copies.unsafe_split, "unsafe_split_with_sizes": _view_copies.unsafe_split_with_sizes,
        "as_strided_scatter": _view_copies.as_strided_scatter,
        # numerics (kiln/_numeric.py, kiln/_pointwise.py, kiln/_norms.py, kiln/_products.py)
        "diff": _numeric.diff, "cross": _numeric.cross, "nanmean": _numeric.nanmean, "cov": _numeric.cov,
        "corrcoef": _numeric.corrcoef, "dist": _numeric.dist, "float_power": _numeric.float_power,
        "float_power_": _numeric.float_power_,
        "frexp": _pointwise.frexp, "gcd": _pointwise.gcd, "gcd_": _pointwise.gcd_, "i0": _pointwise.i0,
        "i0_": _pointwise.i0_, "lcm": _pointwise.lcm, "lcm_": _pointwise.lcm_, "ldexp": _pointwise.ldexp,
        "ldexp_": _pointwise.ldexp_, "mvlgamma": _pointwise.mvlgamma, "mvlgamma_": _pointwise.mvlgamma_,
        "norm": _norms.tensor_norm, "renorm": _norms.renorm, "renorm_": _norms.renorm_,
        "ger": _products.ger,
        # statistics (kiln/_statistics.py, kiln/_histogram.py)
        "bincount": _statistics.bincount, "cummax": _statistics.cummax, "cummin": _statistics.cummin,
        "histc": _statistics.histc, "kthvalue": _statistics.kthvalue, "logcumsumexp": _statistics.logcumsumexp,
        "median": _statistics.median, "nanmedian": _statistics.nanmedian, "nanquantile": _statistics.nanquantile,
        "quantile": _statistics.quantile, "unique": _statistics.unique,
        "unique_consecutive": _statistics.unique_consecutive, "mode": _statistics.mode,
        "histogram": _histogram.histogram,
        # random samplers (kiln/_random_sampling.py)
        "cauchy_": _random_sampling.cauchy_, "geometric_": _random_sampling.geometric_,
        "log_normal_": _random_sampling.log_normal_,
        # spectral (kiln/_stft.py)
        "stft": _stft.stft, "istft": _stft.istft,
        # complex numbers (kiln/_complex.py)
        "real": _complex.REAL_PROPERTY, "imag": _complex.IMAG_PROPERTY,
        "conj": _complex.conj, "conj_physical": _complex.conj_physical, "conj_physical_": _complex.conj_physical_,
        "resolve_conj": _complex.resolve_conj, "resolve_neg": _complex.resolve_neg, "isreal": _complex.isreal,
        "angle": _complex.angle, "is_complex": _complex.tensor_is_complex, "__complex__": _complex.tensor_complex,
        "is_conj": _complex.tensor_is_conj, "is_neg": _complex.tensor_is_neg,
        # layout and the backends kiln does not have (kiln/_layout.py)
        "dim_order": _layout.dim_order, "layout": _layout.LAYOUT_PROPERTY, "output_nr": _layout.OUTPUT_NR_PROPERTY,
        **_layout.BACKEND_FLAG_PROPERTIES, **_layout.SPARSE_METHODS,
        # legacy methods (kiln/_legacy_methods.py)
        "new": _legacy_methods.new, "resize_as_": _legacy_methods.resize_as_, "apply_": _legacy_methods.apply_,
        "map_": _legacy_methods.map_, "map2_": _legacy_methods.map2_,
        "share_memory_": _legacy_methods.share_memory_, "is_shared": _legacy_methods.is_shared,
        "const_data_ptr": _legacy_methods.const_data_ptr, "cuda": _legacy_methods.cuda,
    }
    return methods


def bind(tensor_class) -> None:
    """Attaches every Python-level method and property to ``tensor_class`` (kiln.Tensor)."""
    for name, value in _methods().items():
        # a function with a declared signature numbers its arguments after self as a method
        # (Note [Declared signatures of Python-level ops], kiln/_arguments.py)
        setattr(tensor_class, name, getattr(value, "as_method", value))

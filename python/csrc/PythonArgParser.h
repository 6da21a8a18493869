// PythonArgParser: parses the arguments of a generated op binding by PyTorch's
// rules (overloads tried in order, keywords, defaults, int-list varargs) through
// CPython's fast-call protocol. See Note [Parsing arguments by PyTorch's rules].
#pragma once

#include <Python.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eager/core/ArrayRef.h"
#include "eager/core/DType.h"
#include "eager/core/Device.h"
#include "eager/core/GeneratorImpl.h"
#include "eager/core/MemoryFormat.h"
#include "eager/core/Scalar.h"
#include "eager/ops/Tensor.h"
#include "python/csrc/PyTensor.h"

// Note [Parsing arguments by PyTorch's rules]
// -------------------------------------------
// A binding owns one static PythonArgParser built from its op's python
// signatures, e.g.
//   "add(Tensor input, Tensor other, *, Scalar alpha=1)"
//   "add(Tensor input, Scalar other, Scalar alpha=1)"
// The constructor parses them once. parse() then tries each signature in order
// and takes the first whose every parameter accepts its argument, so a Tensor
// overload listed before a Scalar one wins for tensors and the Scalar one takes
// Python numbers. Matching only *checks* types and stores borrowed PyObject*s
// into caller-provided storage (nullptr = absent or None: use the default);
// converting them (ints, lists, scalars) happens in the PythonArgs accessors the
// binding calls for the matched signature. parse() allocates nothing on success:
// keywords are matched by pointer identity against the interned parameter names
// (and by string compare only for keyword names that are not interned).
//
// The rules, all PyTorch's:
//  - keywords may name any parameter; parameters after `*` only by keyword.
//  - `T?` accepts None, and a default of None makes a parameter accept None.
//  - when the only positional parameter is an int list (view, zeros, permute),
//    several positional ints are gathered into it: x.view(2, 3).
//  - `int[N]` (IntArrayRef[N]) also takes one int, broadcast to N copies.
//  - Python bool is not an int; float is not an int; int is a float; a 0-dim
//    integral tensor is an int, a 0-dim tensor is a float or a Scalar (unless it
//    requires grad); numpy integers and floats work through __index__/__float__.
//  - a list of ints is checked by its first element only; the rest are
//    converted (and may fail, "failed to unpack") by intlist(), which also
//    takes bools after the first element, as PyTorch does.
//  - an element of a Tensor list that is not a tensor raises at once. (Tensor?[]
//    also takes None elements, which PyTorch's parser refuses.)
//  - numpy-style keyword aliases: axis=dim, keepdims=keepdim, x/a/x1=input, x2=other.
// Errors are TypeErrors worded as PyTorch words them: with one signature (or one
// that is plausible by argument count) the exact problem ("missing 1 required
// positional arguments", "got an unexpected keyword argument", "argument 'other'
// (position 2) must be Tensor, not str"); otherwise "received an invalid
// combination of arguments" listing every signature. (Explaining a mismatch,
// PyTorch marks every argument bound to a defaulted parameter "!invalid!";
// kiln marks only the arguments that do not fit.)

namespace kiln::python {

enum class ParamType : uint8_t {
  Tensor,
  Scalar,
  Int,
  IntList,
  Double,
  Bool,
  DType,
  Device,
  String,
  TensorList,
  OptionalTensorList,  // Tensor?[]: tensors or None
  Generator,     // kiln.Generator
  MemoryFormat,  // kiln.memory_format
  // Accepted as None only until its Python type exists. See Note [Parser hooks].
  Layout,
};

/// One parameter of a signature, parsed once.
struct FunctionParameter {
  FunctionParameter(std::string_view fmt, bool kw_only);

  /// Whether `obj` (not None) is acceptable. `failed_idx` receives the index of a
  /// bad list element; a non-tensor in a tensor list throws TypeError right away.
  [[nodiscard]] bool check(PyObject* obj, int argnum, int64_t* failed_idx) const;
  /// The name in messages: "Tensor", "Number", "tuple of ints", "kiln.dtype", ...
  [[nodiscard]] const char* type_name() const;

  ParamType type;
  bool optional = false;    // has a default
  bool allow_none = false;  // `?` or a default of None
  bool keyword_only;
  int size = 0;  // N of int[N]; 0 when not given
  std::string name;
  PyObject* python_name = nullptr;        // interned; kept for the life of the process
  PyObject* numpy_names[3] = {nullptr, nullptr, nullptr};  // interned aliases
  std::string default_str;                // as written, for messages and __text_signature__
  // The parsed default, in the member for `type`.
  bool default_is_none = false;
  bool default_bool = false;
  int64_t default_int = 0;
  double default_double = 0.0;
  Scalar default_scalar;
  DimVector default_intlist;
  std::optional<DType> default_dtype;
  Device default_device;
  MemoryFormat default_memory_format = MemoryFormat::Contiguous;
  std::string default_string;
};

struct FunctionSignature {
  FunctionSignature(std::string_view fmt, int index);

  /// Matches positional args[0..nargs) and keywords (names in `kwnames`, values
  /// after the positionals) against the parameters, writing one borrowed object
  /// per parameter into `dst`. Returns false on mismatch, or throws PyTorch's
  /// TypeError for the first problem when `raise` is set. `*varargs` is set when
  /// the positional ints were gathered into parameter 0.
  bool parse(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** dst, bool raise,
             bool* varargs) const;
  /// "(Tensor input, Tensor other, *, Number alpha = 1)"
  [[nodiscard]] std::string to_string() const;

  std::string name;
  std::vector<FunctionParameter> params;
  size_t min_args = 0;      // parameters without a default
  size_t max_args = 0;      // all parameters
  size_t max_pos_args = 0;  // parameters before `*`
  int index;                // position in the list the parser was built from
  bool hidden = false;      // "|hidden" or "|deprecated": matched last, never listed
  bool deprecated = false;
  bool allow_varargs_intlist = false;  // the only positional parameter is an int list
};

class PythonArgs;

class PythonArgParser {
 public:
  /// Parses the signatures; RuntimeError for a malformed one. Needs the GIL
  /// (parameter names are interned), as a binding's function-local static has.
  explicit PythonArgParser(std::vector<std::string> signatures);

  /// Parses or throws TypeError (see Note [Parsing arguments by PyTorch's rules]).
  /// `self` is the bound tensor of a method; method signatures leave it out, as
  /// PyTorch's do (it is reserved for __torch_function__-style overrides).
  /// `storage` must hold max_params() slots and outlive the returned PythonArgs;
  /// so must `args` (the returned view borrows from both).
  PythonArgs parse(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                   PyObject** storage) const;

  [[nodiscard]] size_t max_params() const { return max_params_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] size_t num_signatures() const { return signatures_.size(); }
  /// The signature that was number `index` in the constructor's list.
  [[nodiscard]] const FunctionSignature& signature(size_t index) const;

  /// "($module, input, other, *, alpha=1)": a __text_signature__ for signature
  /// `signature_index`, so inspect.signature works on the generated builtins.
  /// For a method ("$self") a leading Tensor parameter named input or self is dropped.
  /// Empty when a default has no Python literal form (a dtype such as kiln.int64,
  /// nan): inspect cannot evaluate one, so leave __text_signature__ unset then.
  [[nodiscard]] std::string text_signature(size_t signature_index, bool is_method) const;

 private:
  [[noreturn]] void raise_error(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                                PyObject** storage) const;

  std::vector<FunctionSignature> signatures_;  // deprecated ones moved last
  std::string name_;
  size_t max_params_ = 0;
};

/// The result of a parse: which signature matched and one borrowed object per
/// parameter (nullptr: absent or None, read the default). Accessors convert;
/// those returning lists may allocate.
class PythonArgs {
 public:
  PythonArgs(const FunctionSignature& signature, PyObject** args, PyObject* const* varargs, Py_ssize_t nvarargs)
      : index(signature.index), signature_(&signature), args_(args), varargs_(varargs), nvarargs_(nvarargs) {}

  int index;  // which signature matched, as numbered in the constructor's list

  [[nodiscard]] const FunctionSignature& signature() const { return *signature_; }
  /// The raw borrowed object (nullptr when absent or None).
  [[nodiscard]] PyObject* object(int i) const { return args_[i]; }
  [[nodiscard]] bool is_none(int i) const { return args_[i] == nullptr; }
  /// True when positional ints were gathered into parameter `i` (x.view(2, 3)).
  [[nodiscard]] bool is_varargs(int i) const { return i == 0 && varargs_ != nullptr; }

  [[nodiscard]] const Tensor& tensor(int i) const {
    PyObject* obj = args_[i];
    return obj ? unwrap_tensor(obj) : undefined_tensor();
  }
  [[nodiscard]] std::optional<Tensor> optional_tensor(int i) const {
    if (!args_[i]) return std::nullopt;
    return unwrap_tensor(args_[i]);
  }
  [[nodiscard]] Scalar scalar(int i) const;
  [[nodiscard]] std::optional<Scalar> scalar_optional(int i) const { return optional(i, &PythonArgs::scalar); }
  [[nodiscard]] int64_t to_int64(int i) const {
    PyObject* obj = args_[i];
    if (obj && PyLong_CheckExact(obj)) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
      if (overflow == 0) [[likely]] return v;
    }
    return to_int64_slow(i);
  }
  [[nodiscard]] std::optional<int64_t> to_int64_optional(int i) const { return optional(i, &PythonArgs::to_int64); }
  [[nodiscard]] DimVector intlist(int i) const;
  [[nodiscard]] std::optional<DimVector> intlist_optional(int i) const { return optional(i, &PythonArgs::intlist); }
  [[nodiscard]] double to_double(int i) const {
    PyObject* obj = args_[i];
    if (obj && PyFloat_CheckExact(obj)) return PyFloat_AS_DOUBLE(obj);
    return to_double_slow(i);
  }
  [[nodiscard]] std::optional<double> to_double_optional(int i) const { return optional(i, &PythonArgs::to_double); }
  [[nodiscard]] bool to_bool(int i) const {
    PyObject* obj = args_[i];
    return obj ? obj == Py_True : signature_->params[i].default_bool;
  }
  [[nodiscard]] std::optional<bool> to_bool_optional(int i) const { return optional(i, &PythonArgs::to_bool); }
  [[nodiscard]] DType dtype(int i) const;
  [[nodiscard]] std::optional<DType> dtype_optional(int i) const { return optional(i, &PythonArgs::dtype); }
  [[nodiscard]] Device device(int i) const;
  [[nodiscard]] std::optional<Device> device_optional(int i) const { return optional(i, &PythonArgs::device); }
  [[nodiscard]] MemoryFormat memory_format(int i) const;
  [[nodiscard]] std::optional<MemoryFormat> memory_format_optional(int i) const {
    return optional(i, &PythonArgs::memory_format);
  }
  [[nodiscard]] std::string_view string(int i) const;
  [[nodiscard]] std::optional<std::string_view> string_optional(int i) const { return optional(i, &PythonArgs::string); }
  /// A kiln.Generator; a parameter without one has no default generator (nullopt).
  [[nodiscard]] std::optional<Generator> generator_optional(int i) const;
  [[nodiscard]] std::vector<Tensor> tensorlist(int i) const;
  [[nodiscard]] std::vector<std::optional<Tensor>> optional_tensorlist(int i) const;

 private:
  static const Tensor& undefined_tensor();
  [[nodiscard]] int64_t to_int64_slow(int i) const;
  [[nodiscard]] double to_double_slow(int i) const;
  /// The optional accessors: nullopt when absent or None and the default is None too.
  template <typename T>
  [[nodiscard]] std::optional<T> optional(int i, T (PythonArgs::*read)(int) const) const {
    if (absent_without_default(i)) return std::nullopt;
    return (this->*read)(i);
  }
  /// Absent or None, and the default is None too: the optional accessors' nullopt.
  [[nodiscard]] bool absent_without_default(int i) const {
    return args_[i] == nullptr && (!signature_->params[i].optional || signature_->params[i].default_is_none);
  }

  const FunctionSignature* signature_;
  PyObject** args_;
  PyObject* const* varargs_;  // positional ints gathered into parameter 0, or nullptr
  Py_ssize_t nvarargs_;
};

}  // namespace kiln::python

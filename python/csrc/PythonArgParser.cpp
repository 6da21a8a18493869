// PythonArgParser: signature parsing (once), argument matching (every call) and
// PyTorch-worded errors. See Note [Parsing arguments by PyTorch's rules].
#include "python/csrc/PythonArgParser.h"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "eager/core/Error.h"
#include "python/csrc/Exceptions.h"
#include "python/csrc/PyDType.h"
#include "python/csrc/PyDevice.h"
#include "python/csrc/PyGenerator.h"
#include "python/csrc/PyMemoryFormat.h"
#include "python/csrc/PySymbolicInt.h"

namespace kiln::python {

// Note [Parser hooks]
// -------------------
// Layout? parameters accept None and kiln.strided (python/kiln/_layout.py), kiln's
// one layout, which every kernel already makes, so no accessor reads it;
// anything else gets "must be kiln.layout, not X". A second layout would add
// its check in the matching case of check() and an accessor (layout(i)) to
// PythonArgs; nothing else in the parser changes. Generator (kiln.Generator)
// and MemoryFormat (kiln.memory_format) went this way: generator_optional(i),
// memory_format(i).

namespace {

// --- Signature text ----------------------------------------------------------

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

/// Splits "Tensor a, int[] b=[0,1], str c=', '" at top-level commas.
std::vector<std::string_view> split_params(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[' || c == '{' || c == '(' || c == '<') {
      ++depth;
    } else if (c == ']' || c == '}' || c == ')' || c == '>') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (!trim(s.substr(start)).empty() || !out.empty()) out.push_back(trim(s.substr(start)));
  return out;
}

std::optional<int64_t> parse_int(std::string_view s) {
  s = trim(s);
  int64_t v = 0;
  const char* begin = s.data();
  if (!s.empty() && s.front() == '+') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

double parse_double(std::string_view s, std::string_view fmt) {
  const std::string str(trim(s));
  if (str == "inf" || str == "math.inf") return HUGE_VAL;
  if (str == "-inf" || str == "-math.inf") return -HUGE_VAL;
  char* end = nullptr;
  const double v = std::strtod(str.c_str(), &end);
  KILN_CHECK(!str.empty() && end == str.c_str() + str.size(), "PythonArgParser: bad float default '", s, "' in ",
             fmt);
  return v;
}

/// "[]", "[0,1]", "{0, 1}" or, for int[N], one int repeated N times.
DimVector parse_intlist_default(std::string_view s, int size, std::string_view fmt) {
  s = trim(s);
  if (!s.empty() && (s.front() == '[' || s.front() == '{' || s.front() == '(')) {
    KILN_CHECK(s.size() >= 2 && (s.back() == ']' || s.back() == '}' || s.back() == ')'),
               "PythonArgParser: bad int list default '", s, "' in ", fmt);
    DimVector out;
    for (std::string_view item : split_params(s.substr(1, s.size() - 2))) {
      if (item.empty()) continue;
      const auto v = parse_int(item);
      KILN_CHECK(v.has_value(), "PythonArgParser: bad int list default '", s, "' in ", fmt);
      out.push_back(*v);
    }
    return out;
  }
  const auto v = parse_int(s);
  KILN_CHECK(v.has_value() && size > 0, "PythonArgParser: an int default for an int list needs a size, int[N]: ",
             fmt);
  return DimVector(static_cast<size_t>(size), *v);
}

/// 'abc' or "abc" with C escapes.
std::string parse_string_literal(std::string_view s, std::string_view fmt) {
  KILN_CHECK(s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front(),
             "PythonArgParser: string defaults must be quoted: ", fmt);
  std::string out;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    KILN_CHECK(i + 2 < s.size(), "PythonArgParser: string default ends in a backslash: ", fmt);
    const char c = s[++i];
    switch (c) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      default: out.push_back(c); break;  // \\, \', \"
    }
  }
  return out;
}

struct TypeSpelling {
  std::string_view spelling;
  ParamType type;
};

constexpr TypeSpelling kTypeSpellings[] = {
    {"Tensor", ParamType::Tensor},        {"Scalar", ParamType::Scalar},
    {"int64_t", ParamType::Int},          {"int", ParamType::Int},
    {"SymInt", ParamType::Int},           {"IntArrayRef", ParamType::IntList},
    {"SymIntArrayRef", ParamType::IntList}, {"double", ParamType::Double},
    {"float", ParamType::Double},         {"bool", ParamType::Bool},
    {"ScalarType", ParamType::DType},     {"Device", ParamType::Device},
    {"c10::string_view", ParamType::String}, {"std::string_view", ParamType::String},
    {"std::string", ParamType::String},   {"str", ParamType::String},
    {"TensorList", ParamType::TensorList},
    {"c10::List<std::optional<Tensor>>", ParamType::OptionalTensorList},
    {"c10::List<::std::optional<Tensor>>", ParamType::OptionalTensorList},
    {"c10::List<c10::optional<Tensor>>", ParamType::OptionalTensorList},
    {"Generator", ParamType::Generator},  {"Layout", ParamType::Layout},
    {"MemoryFormat", ParamType::MemoryFormat},
};

/// PyTorch accepts these NumPy spellings as keywords too (torch.sum(a, axis=0)).
struct NumpyAlias {
  std::string_view name;
  const char* aliases[3];
};
constexpr NumpyAlias kNumpyAliases[] = {
    {"dim", {"axis", nullptr, nullptr}},
    {"keepdim", {"keepdims", nullptr, nullptr}},
    {"input", {"x", "a", "x1"}},
    {"other", {"x2", nullptr, nullptr}},
};

PyObject* intern(std::string_view s) {
  PyObject* obj = PyUnicode_InternFromString(std::string(s).c_str());
  if (obj == nullptr) throw python_error_already_set();
  return obj;  // a reference the parser keeps for the life of the process
}

// --- Type checks -------------------------------------------------------------

/// NumPy scalar types are named "numpy.int64", "numpy.float32", ...; telling
/// them by name keeps kiln._C free of the NumPy C API.
bool is_numpy_scalar_type(PyTypeObject* type) {
  return std::strncmp(type->tp_name, "numpy.", 6) == 0 && std::strcmp(type->tp_name, "numpy.ndarray") != 0 &&
         type->tp_as_number != nullptr;
}
bool is_numpy_bool_type(PyTypeObject* type) {
  return std::strcmp(type->tp_name, "numpy.bool") == 0 || std::strcmp(type->tp_name, "numpy.bool_") == 0;
}
bool is_numpy_integer(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  return is_numpy_scalar_type(type) && type->tp_as_number->nb_index != nullptr && !is_numpy_bool_type(type);
}
bool is_numpy_number(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  return is_numpy_scalar_type(type) &&
         (type->tp_as_number->nb_index != nullptr || type->tp_as_number->nb_float != nullptr);
}
bool is_numpy_complex(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  return is_numpy_scalar_type(type) && std::strncmp(type->tp_name + 6, "complex", 7) == 0;
}

/// PyTorch's THPUtils_checkLong: an int that is not a bool, or a NumPy integer.
bool is_int_object(PyObject* obj) {
  if (PyLong_CheckExact(obj)) return true;
  if (PyLong_Check(obj)) return !PyBool_Check(obj);
  return is_numpy_integer(obj) || is_symbolic_int(obj);
}

/// What may stand for one int inside (or in place of) an int list: an int, a
/// NumPy integer or a one-element integral tensor (PyTorch's __index__ rule).
bool is_index_like(PyObject* obj) {
  if (is_int_object(obj)) return true;
  if (is_tensor(obj)) {
    const Tensor& t = unwrap_tensor(obj);
    return t.numel() == 1 && is_integral(t.dtype(), /*include_bool=*/true);
  }
  return false;
}

bool is_device_object(PyObject* obj) {
  static PyTypeObject* device_type = reinterpret_cast<PyTypeObject*>(pybind11::type::of<Device>().ptr());
  return PyObject_TypeCheck(obj, device_type);
}

/// obj is kiln.strided (Note [Parser hooks]); looked up once, from kiln._layout.
bool is_strided_layout(PyObject* obj) {
  static PyObject* strided = [] {
    PyObject* module = PyImport_ImportModule("kiln._layout");
    PyObject* found = module != nullptr ? PyObject_GetAttrString(module, "strided") : nullptr;
    Py_XDECREF(module);
    if (found == nullptr) PyErr_Clear();
    return found;  // kept for the process's life
  }();
  return strided != nullptr && obj == strided;
}

bool is_sequence(PyObject* obj) { return PyTuple_Check(obj) || PyList_Check(obj); }
PyObject* const* sequence_items(PyObject* obj) {
  return PyTuple_Check(obj) ? &PyTuple_GET_ITEM(obj, 0) : &PyList_GET_ITEM(obj, 0);
}
Py_ssize_t sequence_size(PyObject* obj) { return PyTuple_Check(obj) ? PyTuple_GET_SIZE(obj) : PyList_GET_SIZE(obj); }

bool check_tensor_list(PyObject* obj, int argnum, bool allow_none) {
  if (!is_sequence(obj)) return false;
  const Py_ssize_t n = sequence_size(obj);
  PyObject* const* items = sequence_items(obj);
  for (Py_ssize_t k = 0; k < n; ++k) {
    if (is_tensor(items[k]) || (allow_none && items[k] == Py_None)) continue;
    // PyTorch raises here even while it is still trying other signatures.
    KILN_FAIL(Type, "expected Tensor as element ", k, " in argument ", argnum, ", but got ",
              Py_TYPE(items[k])->tp_name);
  }
  return true;
}

// --- Keywords ----------------------------------------------------------------

bool same_name(PyObject* key, PyObject* name) {
  if (key == name) return true;
  // Interned strings are equal only when identical, and call sites intern their
  // keyword names, so a string compare is only needed for built-up names.
  if (PyUnicode_CHECK_INTERNED(key)) return false;
  return PyUnicode_Compare(key, name) == 0;
}

/// The value passed for `name`, or nullptr.
PyObject* find_keyword(PyObject* name, PyObject* const* names, PyObject* const* values, Py_ssize_t nkw) {
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    if (names[k] == name) return values[k];
  }
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    if (!PyUnicode_CHECK_INTERNED(names[k]) && PyUnicode_Compare(names[k], name) == 0) return values[k];
  }
  return nullptr;
}

PyObject* find_keyword(const FunctionParameter& param, PyObject* kwnames, PyObject* const* values, Py_ssize_t nkw) {
  PyObject* const* names = &PyTuple_GET_ITEM(kwnames, 0);
  if (PyObject* obj = find_keyword(param.python_name, names, values, nkw)) return obj;
  for (PyObject* alias : param.numpy_names) {
    if (alias == nullptr) break;
    if (PyObject* obj = find_keyword(alias, names, values, nkw)) return obj;
  }
  return nullptr;
}

std::string_view utf8(PyObject* str) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(str, &size);
  if (data == nullptr) throw python_error_already_set();
  return {data, static_cast<size_t>(size)};
}

// --- Errors (PyTorch's wording) ----------------------------------------------

[[noreturn]] void extra_args(const FunctionSignature& sig, Py_ssize_t nargs) {
  if (sig.min_args != sig.max_pos_args) {
    KILN_FAIL(Type, sig.name, "() takes from ", sig.min_args, " to ", sig.max_pos_args,
              " positional arguments but ", nargs, " were given");
  }
  KILN_FAIL(Type, sig.name, "() takes ", sig.max_pos_args, " positional argument", sig.max_pos_args == 1 ? "" : "s",
            " but ", nargs, " ", nargs == 1 ? "was" : "were", " given");
}

[[noreturn]] void missing_args(const FunctionSignature& sig, size_t idx) {
  int num_missing = 0;
  std::string names;
  for (size_t i = idx; i < sig.params.size(); ++i) {
    if (sig.params[i].optional) continue;
    if (num_missing++ > 0) names += ", ";
    names += '"' + sig.params[i].name + '"';
  }
  // PyTorch's plural is backwards ("1 required positional arguments"); kept so
  // messages match.
  KILN_FAIL(Type, sig.name, "() missing ", num_missing, " required positional argument",
            num_missing == 1 ? "s" : "", ": ", names);
}

/// Index of the parameter named `key` (aliases not considered), or -1.
int find_param(const FunctionSignature& sig, PyObject* key) {
  for (size_t i = 0; i < sig.params.size(); ++i) {
    if (same_name(key, sig.params[i].python_name)) return static_cast<int>(i);
  }
  return -1;
}

[[noreturn]] void extra_kwargs(const FunctionSignature& sig, PyObject* kwnames, Py_ssize_t nargs) {
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    const int idx = find_param(sig, key);
    KILN_CHECK_TYPE(idx >= 0, sig.name, "() got an unexpected keyword argument '", utf8(key), "'");
    KILN_CHECK_TYPE(idx >= nargs, sig.name, "() got multiple values for argument '", utf8(key), "'");
  }
  KILN_FAIL(Type, "invalid keyword arguments");
}

/// "int", or "tuple of (int, str)" / "list of [int]" as PyTorch's messages spell lists.
std::string describe(PyObject* obj, bool expand_sequences) {
  if (!expand_sequences || !is_sequence(obj)) return Py_TYPE(obj)->tp_name;
  const bool tuple = PyTuple_Check(obj);
  std::string out = std::string(Py_TYPE(obj)->tp_name) + " of " + (tuple ? "(" : "[");
  const Py_ssize_t n = sequence_size(obj);
  for (Py_ssize_t k = 0; k < n; ++k) {
    if (k) out += ", ";
    out += Py_TYPE(sequence_items(obj)[k])->tp_name;
  }
  if (tuple && n == 1) out += ",";
  return out + (tuple ? ")" : "]");
}

bool accepts(const FunctionParameter& param, PyObject* obj, int argnum) {
  if (obj == Py_None && param.allow_none) return true;
  try {
    int64_t failed_idx = -1;
    return param.check(obj, argnum, &failed_idx);
  } catch (const kiln::Error&) {
    return false;
  }
}

}  // namespace

// --- FunctionParameter -------------------------------------------------------

FunctionParameter::FunctionParameter(std::string_view fmt, bool kw_only) : keyword_only(kw_only) {
  const size_t space = fmt.rfind(' ', fmt.find('='));
  KILN_CHECK(space != std::string_view::npos, "PythonArgParser: parameter without a type: '", fmt, "'");
  std::string_view type_str = trim(fmt.substr(0, space));
  std::string_view name_str = trim(fmt.substr(space + 1));

  if (type_str.ends_with('?')) {
    allow_none = true;
    type_str.remove_suffix(1);
  }
  auto lookup = [](std::string_view spelling) -> std::optional<ParamType> {
    for (const auto& s : kTypeSpellings) {
      if (s.spelling == spelling) return s.type;
    }
    return std::nullopt;
  };
  std::optional<ParamType> found;
  if (type_str.ends_with(']')) {  // int[], int[2], IntArrayRef[1], Tensor[], Tensor?[]
    const size_t open = type_str.rfind('[');
    KILN_CHECK(open != std::string_view::npos, "PythonArgParser: bad type '", type_str, "'");
    const std::string_view inner = type_str.substr(open + 1, type_str.size() - open - 2);
    if (!inner.empty()) {
      const auto n = parse_int(inner);
      KILN_CHECK(n.has_value() && *n > 0, "PythonArgParser: bad list size in '", type_str, "'");
      size = static_cast<int>(*n);
    }
    const std::string_view base = type_str.substr(0, open);
    const auto element = lookup(base);
    if (base == "Tensor?") {
      found = ParamType::OptionalTensorList;
    } else if (element == ParamType::Tensor) {
      found = ParamType::TensorList;
    } else if (element == ParamType::Int || element == ParamType::IntList) {
      found = ParamType::IntList;
    }
  } else {
    found = lookup(type_str);
  }
  KILN_CHECK(found.has_value(), "PythonArgParser: unknown type '", type_str, "' in '", fmt, "'");
  type = *found;

  const size_t eq = name_str.find('=');
  name = std::string(trim(name_str.substr(0, eq)));
  KILN_CHECK(!name.empty(), "PythonArgParser: parameter without a name: '", fmt, "'");
  python_name = intern(name);
  for (const auto& alias : kNumpyAliases) {
    if (alias.name != name) continue;
    for (size_t k = 0; k < 3 && alias.aliases[k]; ++k) numpy_names[k] = intern(alias.aliases[k]);
  }
  if (eq == std::string_view::npos) return;

  optional = true;
  default_str = std::string(trim(name_str.substr(eq + 1)));
  const std::string_view d = default_str;
  if (d == "None") {
    allow_none = true;
    default_is_none = true;
    return;
  }
  switch (type) {
    case ParamType::Tensor:
      KILN_FAIL(Runtime, "PythonArgParser: a Tensor default must be None: '", fmt, "'");
    case ParamType::Scalar:
      if (d == "True" || d == "False") {
        default_scalar = Scalar(d == "True");
      } else if (const auto v = parse_int(d)) {
        default_scalar = Scalar(*v);
      } else {
        default_scalar = Scalar(parse_double(d, fmt));
      }
      break;
    case ParamType::Int: {
      const auto v = parse_int(d);
      KILN_CHECK(v.has_value(), "PythonArgParser: bad int default in '", fmt, "'");
      default_int = *v;
      break;
    }
    case ParamType::IntList:
      default_intlist = parse_intlist_default(d, size, fmt);
      break;
    case ParamType::Double:
      default_double = parse_double(d, fmt);
      break;
    case ParamType::Bool:
      KILN_CHECK(d == "True" || d == "False" || d == "true" || d == "false", "PythonArgParser: bad bool default in '",
                 fmt, "'");
      default_bool = d == "True" || d == "true";
      break;
    case ParamType::DType: {
      std::string_view dname = d;
      for (std::string_view prefix : {"kiln.", "torch."}) {
        if (dname.starts_with(prefix)) dname.remove_prefix(prefix.size());
      }
      default_dtype = dtype_from_name(dname);
      KILN_CHECK(default_dtype.has_value(), "PythonArgParser: bad dtype default in '", fmt, "'");
      break;
    }
    case ParamType::Device: {
      std::string_view spec = d;
      if (spec.size() >= 2 && (spec.front() == '"' || spec.front() == '\'')) spec = spec.substr(1, spec.size() - 2);
      default_device = Device(spec);
      break;
    }
    case ParamType::String:
      default_string = parse_string_literal(d, fmt);
      break;
    case ParamType::TensorList:
    case ParamType::OptionalTensorList:
      KILN_CHECK(d == "[]" || d == "()", "PythonArgParser: a tensor list default must be None or []: '", fmt, "'");
      break;
    case ParamType::MemoryFormat: {
      std::string_view fname = d;
      for (std::string_view prefix : {"kiln.", "torch."}) {
        if (fname.starts_with(prefix)) fname.remove_prefix(prefix.size());
      }
      bool found_format = false;
      for (int f = 0; f < kNumMemoryFormats; ++f) {
        if (memory_format_name(static_cast<MemoryFormat>(f)) != fname) continue;
        default_memory_format = static_cast<MemoryFormat>(f);
        found_format = true;
      }
      KILN_CHECK(found_format, "PythonArgParser: bad memory_format default in '", fmt, "'");
      break;
    }
    case ParamType::Generator:
    case ParamType::Layout:
      break;  // See Note [Parser hooks]: the only default is None.
  }
}

bool FunctionParameter::check(PyObject* obj, int argnum, int64_t* failed_idx) const {
  switch (type) {
    case ParamType::Tensor:
      return is_tensor(obj);
    case ParamType::Scalar:
      if (PyComplex_Check(obj)) return true;
      [[fallthrough]];
    case ParamType::Double:
      if (PyFloat_Check(obj) || PyLong_Check(obj) || is_symbolic_int(obj)) return true;  // bool too, as PyTorch
      if (is_tensor(obj)) {
        const Tensor& t = unwrap_tensor(obj);
        return t.dim() == 0 && !t.requires_grad();
      }
      return is_numpy_number(obj);
    case ParamType::Int:
      if (is_int_object(obj)) return true;
      if (is_tensor(obj)) {
        const Tensor& t = unwrap_tensor(obj);
        return t.dim() == 0 && is_integral(t.dtype(), /*include_bool=*/false) && !t.requires_grad();
      }
      return false;
    case ParamType::IntList:
      if (is_sequence(obj)) {
        // Only the first element is checked; see Note [Parsing arguments by PyTorch's rules].
        if (sequence_size(obj) == 0 || is_index_like(sequence_items(obj)[0])) return true;
        *failed_idx = 0;
        return false;
      }
      return size > 0 && is_index_like(obj);
    case ParamType::Bool:
      return PyBool_Check(obj);
    case ParamType::DType:
      return is_dtype_object(obj) || obj == reinterpret_cast<PyObject*>(&PyFloat_Type) ||
             obj == reinterpret_cast<PyObject*>(&PyLong_Type) || obj == reinterpret_cast<PyObject*>(&PyBool_Type);
    case ParamType::Device:
      return is_int_object(obj) || PyUnicode_Check(obj) || PyBytes_Check(obj) || is_device_object(obj);
    case ParamType::String:
      return PyUnicode_Check(obj) || PyBytes_Check(obj);
    case ParamType::TensorList:
      return check_tensor_list(obj, argnum, /*allow_none=*/false);
    case ParamType::OptionalTensorList:
      return check_tensor_list(obj, argnum, /*allow_none=*/true);
    case ParamType::MemoryFormat:
      return is_memory_format_object(obj);
    case ParamType::Generator:
      return is_generator_object(obj);
    case ParamType::Layout:
      return is_strided_layout(obj);  // See Note [Parser hooks].
  }
  return false;
}

const char* FunctionParameter::type_name() const {
  switch (type) {
    case ParamType::Tensor: return "Tensor";
    case ParamType::Scalar: return "Number";
    case ParamType::Int: return "int";
    case ParamType::IntList: return "tuple of ints";
    case ParamType::Double: return "float";
    case ParamType::Bool: return "bool";
    case ParamType::DType: return "kiln.dtype";
    case ParamType::Device: return "kiln.device";
    case ParamType::String: return "str";
    case ParamType::TensorList: return "tuple of Tensors";
    case ParamType::OptionalTensorList: return "tuple of Tensors";
    case ParamType::Generator: return "kiln.Generator";
    case ParamType::Layout: return "kiln.layout";
    case ParamType::MemoryFormat: return "kiln.memory_format";
  }
  return "object";
}

// --- FunctionSignature -------------------------------------------------------

FunctionSignature::FunctionSignature(std::string_view fmt, int index) : index(index) {
  const size_t open = fmt.find('(');
  const size_t close = fmt.rfind(')');
  KILN_CHECK(open != std::string_view::npos && close != std::string_view::npos && open < close,
             "PythonArgParser: malformed signature: ", fmt);
  name = std::string(trim(fmt.substr(0, open)));
  bool keyword_only = false;
  for (std::string_view p : split_params(fmt.substr(open + 1, close - open - 1))) {
    KILN_CHECK(!p.empty(), "PythonArgParser: malformed signature: ", fmt);
    if (p == "*") {
      keyword_only = true;
      continue;
    }
    params.emplace_back(p, keyword_only);
  }
  const std::string_view suffix = trim(fmt.substr(close + 1));
  if (suffix == "|deprecated") {
    hidden = deprecated = true;
  } else if (suffix == "|hidden") {
    hidden = true;
  } else {
    KILN_CHECK(suffix.empty(), "PythonArgParser: unknown signature suffix '", suffix, "' in ", fmt);
  }
  max_args = params.size();
  for (const auto& p : params) {
    if (!p.optional) ++min_args;
    if (!p.keyword_only) ++max_pos_args;
  }
  allow_varargs_intlist = max_pos_args == 1 && params[0].type == ParamType::IntList;
}

bool FunctionSignature::parse(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** dst, bool raise,
                              bool* varargs) const {
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  PyObject* const* kwvalues = args + nargs;
  Py_ssize_t remaining_kwargs = nkw;
  *varargs = false;

  // x.view(2, 3) reads as x.view((2, 3)) when the first argument is an int.
  const bool allow_varargs = allow_varargs_intlist && (nargs == 0 || is_index_like(args[0]));
  if (static_cast<size_t>(nargs) > max_pos_args && !allow_varargs) {
    if (raise) extra_args(*this, nargs);
    return false;
  }

  Py_ssize_t arg_pos = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const FunctionParameter& param = params[i];
    PyObject* obj = nullptr;
    bool is_kwd = false;
    if (arg_pos < nargs) {
      if (param.keyword_only) {  // positionals left over after gathering varargs
        if (raise) extra_args(*this, nargs);
        return false;
      }
      obj = args[arg_pos];
    } else if (nkw > 0) {
      obj = find_keyword(param, kwnames, kwvalues, nkw);
      is_kwd = true;
    }

    int64_t failed_idx = -1;
    if ((obj == nullptr && param.optional) || (obj == Py_None && param.allow_none)) {
      dst[i] = nullptr;
    } else if (obj == nullptr) {
      if (raise) missing_args(*this, i);
      return false;
    } else if (param.check(obj, static_cast<int>(i), &failed_idx)) {
      dst[i] = obj;
    } else if (allow_varargs && arg_pos == 0 && !is_kwd) {
      // Take every positional argument as this parameter: permute(1, 2, 3).
      dst[i] = obj;
      *varargs = true;
      arg_pos = nargs;
      continue;
    } else if (raise) {
      if (is_kwd) {
        KILN_FAIL(Type, name, "(): argument '", param.name, "' must be ", param.type_name(), ", not ",
                  Py_TYPE(obj)->tp_name);
      }
      if (failed_idx != -1 && is_sequence(obj)) {
        KILN_FAIL(Type, name, "(): argument '", param.name, "' (position ", arg_pos + 1, ") must be ",
                  param.type_name(), ", but found element of type ",
                  Py_TYPE(sequence_items(obj)[failed_idx])->tp_name, " at pos ", failed_idx);
      }
      KILN_FAIL(Type, name, "(): argument '", param.name, "' (position ", arg_pos + 1, ") must be ", param.type_name(),
                ", not ", Py_TYPE(obj)->tp_name);
    } else {
      return false;
    }

    if (!is_kwd) {
      ++arg_pos;
    } else if (obj != nullptr) {
      --remaining_kwargs;
    }
  }

  if (remaining_kwargs > 0) {
    if (raise) extra_kwargs(*this, kwnames, nargs);
    return false;
  }
  return true;
}

std::string FunctionSignature::to_string() const {
  std::string out = "(";
  bool keyword_seen = false;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    if (i) out += ", ";
    if (p.keyword_only && !keyword_seen) {
      out += "*, ";
      keyword_seen = true;
    }
    out += p.type_name();
    out += ' ';
    out += p.name;
    if (p.optional) out += " = " + p.default_str;
  }
  return out + ")";
}

// --- PythonArgParser ---------------------------------------------------------

PythonArgParser::PythonArgParser(std::vector<std::string> signatures) {
  KILN_CHECK(!signatures.empty(), "PythonArgParser: no signatures");
  signatures_.reserve(signatures.size());
  for (size_t i = 0; i < signatures.size(); ++i) signatures_.emplace_back(signatures[i], static_cast<int>(i));
  name_ = signatures_[0].name;
  for (const auto& sig : signatures_) {
    KILN_CHECK(sig.name == name_, "PythonArgParser: signatures of one parser must share a name: ", name_, " and ",
               sig.name);
    max_params_ = std::max(max_params_, sig.params.size());
  }
  // Deprecated signatures are tried last.
  std::stable_partition(signatures_.begin(), signatures_.end(),
                        [](const FunctionSignature& sig) { return !sig.deprecated; });
}

const FunctionSignature& PythonArgParser::signature(size_t index) const {
  for (const auto& sig : signatures_) {
    if (static_cast<size_t>(sig.index) == index) return sig;
  }
  KILN_FAIL(Index, "PythonArgParser: ", name_, " has no signature ", index);
}

PythonArgs PythonArgParser::parse(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                                  PyObject** storage) const {
  nargs = PyVectorcall_NARGS(nargs);
  bool varargs = false;
  for (const auto& sig : signatures_) {
    if (sig.parse(args, nargs, kwnames, storage, /*raise=*/false, &varargs)) {
      return PythonArgs(sig, storage, varargs ? args : nullptr, varargs ? nargs : 0);
    }
  }
  raise_error(args, nargs, kwnames, storage);
}

void PythonArgParser::raise_error(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                                  PyObject** storage) const {
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  bool varargs = false;
  // One signature, or one that is plausible by argument count: its exact problem.
  const FunctionSignature* plausible = nullptr;
  int num_plausible = 0;
  const size_t num_args = static_cast<size_t>(nargs + nkw);
  for (const auto& sig : signatures_) {
    if (!sig.hidden && num_args >= sig.min_args && num_args <= sig.max_args) {
      plausible = &sig;
      ++num_plausible;
    }
  }
  // One signature PyTorch binds too: "|hidden" ones (not deprecated) stand for overloads
  // PyTorch does not bind at all (add.Scalar; HIDDEN_OVERLOADS in tools/opgen/python_bindings.py).
  const auto torch_binds = [](const FunctionSignature& s) { return !s.hidden || s.deprecated; };
  if (signatures_.size() == 1) {
    plausible = &signatures_[0];
    num_plausible = 1;
  } else if (std::count_if(signatures_.begin(), signatures_.end(), torch_binds) == 1) {
    plausible = &*std::find_if(signatures_.begin(), signatures_.end(), torch_binds);
    num_plausible = 1;
  }
  if (num_plausible == 1) plausible->parse(args, nargs, kwnames, storage, /*raise=*/true, &varargs);

  // Otherwise list them all.
  std::vector<const FunctionSignature*> options;
  for (const auto& sig : signatures_) {
    if (!sig.hidden) options.push_back(&sig);
  }
  auto param_named = [](const FunctionSignature& sig, PyObject* key) -> const FunctionParameter* {
    const int i = find_param(sig, key);
    return i < 0 ? nullptr : &sig.params[static_cast<size_t>(i)];
  };
  auto plain_args = [&] {
    std::string out = "(";
    for (Py_ssize_t i = 0; i < nargs; ++i) out += std::string(i ? ", " : "") + Py_TYPE(args[i])->tp_name;
    for (Py_ssize_t k = 0; k < nkw; ++k) {
      out += std::string(nargs + k ? ", " : "") + std::string(utf8(PyTuple_GET_ITEM(kwnames, k))) + "=" +
             Py_TYPE(args[nargs + k])->tp_name;
    }
    return out + ")";
  };
  // "(Tensor, !str!, alpha=int)": each argument checked against the parameter it would bind to.
  auto marked_args = [&](const FunctionSignature& sig) {
    std::string out = "(";
    for (Py_ssize_t i = 0; i < nargs + nkw; ++i) {
      const bool is_kw = i >= nargs;
      PyObject* obj = args[i];
      const FunctionParameter* param = nullptr;
      std::string text;
      if (is_kw) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, i - nargs);
        param = param_named(sig, key);
        text = std::string(utf8(key)) + "=";
      } else if (static_cast<size_t>(i) < sig.max_pos_args) {
        param = &sig.params[static_cast<size_t>(i)];  // keyword-only parameters take no positionals
      }
      text += describe(obj, /*expand_sequences=*/true);
      const bool ok = param != nullptr && accepts(*param, obj, static_cast<int>(param - sig.params.data()));
      out += std::string(i ? ", " : "") + (ok ? text : "!" + text + "!");
    }
    return out + ")";
  };
  auto unknown_keywords = [&](const FunctionSignature& sig) {
    std::string out;
    for (Py_ssize_t k = 0; k < nkw; ++k) {
      PyObject* key = PyTuple_GET_ITEM(kwnames, k);
      if (param_named(sig, key) == nullptr) out += std::string(out.empty() ? "" : ", ") + std::string(utf8(key));
    }
    return out;
  };
  // PyTorch explains a signature's mismatch only when the argument count equals
  // its entry count: the parameters, and "*" as one more.
  auto count_matches = [&](const FunctionSignature& sig) {
    return num_args == sig.params.size() + (sig.max_pos_args < sig.params.size() ? 1 : 0);
  };

  std::string msg = name_ + "() received an invalid combination of arguments - ";
  if (options.size() == 1) {
    const FunctionSignature& sig = *options[0];
    const std::string unknown = unknown_keywords(sig);
    if (!unknown.empty()) {
      msg += "got unrecognized keyword arguments: " + unknown;
    } else {
      msg += "got " + (count_matches(sig) ? marked_args(sig) : plain_args()) + ", but expected " + sig.to_string();
    }
  } else {
    msg += "got " + plain_args() + ", but expected one of:\n";
    for (const FunctionSignature* sig : options) {
      msg += " * " + sig->to_string() + "\n";
      if (!count_matches(*sig)) continue;
      const std::string unknown = unknown_keywords(*sig);
      if (!unknown.empty()) {
        msg += "      didn't match because some of the keywords were incorrect: " + unknown + "\n";
      } else {
        msg += "      didn't match because some of the arguments have invalid types: " + marked_args(*sig) + "\n";
      }
    }
  }
  KILN_FAIL(Type, msg);
}

std::string PythonArgParser::text_signature(size_t signature_index, bool is_method) const {
  const FunctionSignature& sig = signature(signature_index);
  std::string out = is_method ? "($self" : "($module";
  size_t first = 0;
  if (is_method && !sig.params.empty() && sig.params[0].type == ParamType::Tensor &&
      (sig.params[0].name == "input" || sig.params[0].name == "self")) {
    first = 1;
  }
  bool keyword_seen = false;
  for (size_t i = first; i < sig.params.size(); ++i) {
    const auto& p = sig.params[i];
    if (p.keyword_only && !keyword_seen) {
      out += ", *";
      keyword_seen = true;
    }
    out += ", " + p.name;
    if (!p.optional) continue;
    // Defaults as literals: inspect evaluates nothing else (CPython 3.11 resolves
    // names only to str, int, float, bytes, bool or None).
    std::string d = p.default_str;
    if (p.type == ParamType::IntList && !d.empty() && d.front() == '{') d = "[" + d.substr(1, d.size() - 2) + "]";
    if (d == "inf" || d == "math.inf") d = "1e309";  // parses as float('inf')
    if (d == "-inf" || d == "-math.inf") d = "-1e309";
    if (d == "true" || d == "false") d = d == "true" ? "True" : "False";
    if (p.type == ParamType::Device && d != "None" && d.front() != '"' && d.front() != '\'') d = "'" + d + "'";
    if (((p.type == ParamType::DType || p.type == ParamType::MemoryFormat) && d != "None") || d == "nan" ||
        d == "-nan") {
      return {};  // no literal form
    }
    out += "=" + d;
  }
  return out + ")";
}

// --- PythonArgs --------------------------------------------------------------

namespace {

/// The value of a one-element tensor as a Scalar of its category.
Scalar tensor_item(const Tensor& t, const FunctionSignature& sig, int i) {
  KILN_CHECK(t.numel() == 1, sig.name, "(): argument '", sig.params[static_cast<size_t>(i)].name, "': a Tensor with ",
             t.numel(), " elements cannot be converted to Scalar");
  // TODO(cuda): read device tensors through a copy once CUDA copies exist.
  KILN_CHECK_NOT_IMPLEMENTED(t.device().is_cpu(), sig.name, "(): argument '", sig.params[static_cast<size_t>(i)].name,
                             "': reading a ", t.device(), " tensor as a number is not supported yet");
  return visit_dtype_and_complex(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = *t.data_ptr<T>();
    if constexpr (std::is_same_v<T, bool> || is_complex_v<T>) {
      return Scalar(v);
    } else if constexpr (std::is_integral_v<T>) {
      return Scalar(static_cast<int64_t>(v));
    } else {
      return Scalar(static_cast<double>(static_cast<float>(v)));
    }
  });
}

int64_t unpack_long(PyObject* obj) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (v == -1 && PyErr_Occurred()) throw python_error_already_set();
  KILN_CHECK_VALUE(overflow == 0, "Overflow when unpacking long long");
  return v;
}

/// Any __index__ object (a NumPy integer, a bool inside a list) as int64.
int64_t unpack_index(PyObject* obj) {
  if (PyLong_Check(obj)) return unpack_long(obj);
  if (is_symbolic_int(obj)) return symbolic_int_value(obj);  // capture Note [Symbolic sizes under capture]
  PyObject* index = PyNumber_Index(obj);
  if (index == nullptr) throw python_error_already_set();
  try {
    const int64_t v = unpack_long(index);
    Py_DECREF(index);
    return v;
  } catch (...) {
    Py_DECREF(index);
    throw;
  }
}

/// PyTorch's "failed to unpack" error for element `idx` of an int list.
[[noreturn]] void throw_intlist_error(const FunctionSignature& sig, int i, PyObject* obj, Py_ssize_t idx,
                                      const std::string& error = {}) {
  const auto& p = sig.params[static_cast<size_t>(i)];
  KILN_FAIL(Type, sig.name, "(): argument '", p.name, "' failed to unpack the object at pos ", idx + 1,
            " with error \"", error.empty() ? std::string("type must be ") + p.type_name() + ",but got " +
                                                  Py_TYPE(obj)->tp_name
                                            : error,
            "\"");
}

int64_t intlist_element(const FunctionSignature& sig, int i, PyObject* obj, Py_ssize_t idx) {
  try {
    if (PyLong_CheckExact(obj)) return unpack_long(obj);
    if (is_symbolic_int(obj)) return symbolic_int_value(obj, idx);  // capture Note [Symbolic sizes under capture]
    if (is_tensor(obj)) {
      const Tensor& t = unwrap_tensor(obj);
      if (t.numel() != 1 || !is_integral(t.dtype(), /*include_bool=*/true)) throw_intlist_error(sig, i, obj, idx);
      return tensor_item(t, sig, i).to_int64();
    }
    return unpack_index(obj);  // NumPy integers; bools too, as PyTorch
  } catch (const python_error_already_set&) {
    PyErr_Clear();
    throw_intlist_error(sig, i, obj, idx);
  } catch (const kiln::Error& e) {
    if (e.kind() == ErrorKind::Type) throw;
    throw_intlist_error(sig, i, obj, idx, e.message());
  }
}

Scalar scalar_from(PyObject* obj, const FunctionSignature& sig, int i) {
  if (PyBool_Check(obj)) return Scalar(obj == Py_True);
  if (PyLong_Check(obj)) {
    const long long v = PyLong_AsLongLong(obj);  // OverflowError, as PyTorch
    if (v == -1 && PyErr_Occurred()) throw python_error_already_set();
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(obj)) return Scalar(PyFloat_AS_DOUBLE(obj));
  if (is_tensor(obj)) return tensor_item(unwrap_tensor(obj), sig, i);
  if (is_numpy_integer(obj) || is_symbolic_int(obj)) return Scalar(unpack_index(obj));
  if (PyComplex_Check(obj) || is_numpy_complex(obj)) {
    const Py_complex c = PyComplex_AsCComplex(obj);
    if (c.real == -1.0 && PyErr_Occurred()) throw python_error_already_set();
    return Scalar(std::complex<double>(c.real, c.imag));
  }
  const double v = PyFloat_AsDouble(obj);
  if (v == -1.0 && PyErr_Occurred()) throw python_error_already_set();
  return Scalar(v);
}

}  // namespace

const Tensor& PythonArgs::undefined_tensor() {
  static const Tensor undefined;
  return undefined;
}

Scalar PythonArgs::scalar(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return signature_->params[static_cast<size_t>(i)].default_scalar;
  if (PyLong_CheckExact(obj)) {
    const long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) throw python_error_already_set();
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_CheckExact(obj)) return Scalar(PyFloat_AS_DOUBLE(obj));
  return scalar_from(obj, *signature_, i);
}

int64_t PythonArgs::to_int64_slow(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return signature_->params[static_cast<size_t>(i)].default_int;
  if (is_tensor(obj)) return tensor_item(unwrap_tensor(obj), *signature_, i).to_int64();
  return unpack_index(obj);
}

DimVector PythonArgs::intlist(int i) const {
  PyObject* obj = args_[i];
  const auto& param = signature_->params[static_cast<size_t>(i)];
  if (obj == nullptr) return param.default_intlist;
  PyObject* const* items = nullptr;
  Py_ssize_t n = 0;
  if (is_varargs(i)) {
    items = varargs_;
    n = nvarargs_;
  } else if (is_sequence(obj)) {
    items = sequence_items(obj);
    n = sequence_size(obj);
  } else {  // int[N] given one int
    return DimVector(static_cast<size_t>(param.size), intlist_element(*signature_, i, obj, 0));
  }
  DimVector out(static_cast<size_t>(n));
  for (Py_ssize_t k = 0; k < n; ++k) {
    // Re-read the items: converting one may run Python code (__index__) that resizes a list.
    if (!is_varargs(i)) {
      KILN_CHECK(k < sequence_size(obj), signature_->name, "(): argument '", param.name, "' changed size while parsed");
      items = sequence_items(obj);
    }
    out[static_cast<size_t>(k)] = intlist_element(*signature_, i, items[k], k);
  }
  return out;
}

double PythonArgs::to_double_slow(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return signature_->params[static_cast<size_t>(i)].default_double;
  if (PyFloat_Check(obj)) return PyFloat_AS_DOUBLE(obj);
  if (is_tensor(obj)) return tensor_item(unwrap_tensor(obj), *signature_, i).to_double();
  const double v = PyLong_Check(obj) ? PyLong_AsDouble(obj) : PyFloat_AsDouble(obj);
  if (v == -1.0 && PyErr_Occurred()) throw python_error_already_set();
  return v;
}

DType PythonArgs::dtype(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return signature_->params[static_cast<size_t>(i)].default_dtype.value_or(default_dtype());
  return dtype_from_object(obj);
}

Device PythonArgs::device(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return signature_->params[static_cast<size_t>(i)].default_device;
  if (is_int_object(obj)) {
    const int64_t index = unpack_index(obj);
    KILN_CHECK(index >= 0, "Device index must not be negative");
    KILN_CHECK(index <= INT8_MAX, "Device index ", index, " is out of range");
    return Device(DeviceType::CUDA, static_cast<int8_t>(index));
  }
  if (PyBytes_Check(obj)) return Device(std::string_view(PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj)));
  return device_from_object(obj);
}

MemoryFormat PythonArgs::memory_format(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return signature_->params[static_cast<size_t>(i)].default_memory_format;
  return memory_format_from_object(obj);
}

std::string_view PythonArgs::string(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return signature_->params[static_cast<size_t>(i)].default_string;
  if (PyBytes_Check(obj)) return {PyBytes_AS_STRING(obj), static_cast<size_t>(PyBytes_GET_SIZE(obj))};
  return utf8(obj);
}

std::optional<Generator> PythonArgs::generator_optional(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return std::nullopt;
  return unwrap_generator(obj);
}

std::vector<Tensor> PythonArgs::tensorlist(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return {};
  const Py_ssize_t n = sequence_size(obj);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(n));
  for (Py_ssize_t k = 0; k < n; ++k) out.push_back(unwrap_tensor(sequence_items(obj)[k]));
  return out;
}

std::vector<std::optional<Tensor>> PythonArgs::optional_tensorlist(int i) const {
  PyObject* obj = args_[i];
  if (obj == nullptr) return {};
  const Py_ssize_t n = sequence_size(obj);
  std::vector<std::optional<Tensor>> out;
  out.reserve(static_cast<size_t>(n));
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* item = sequence_items(obj)[k];
    out.push_back(item == Py_None ? std::nullopt : std::optional<Tensor>(unwrap_tensor(item)));
  }
  return out;
}

}  // namespace kiln::python

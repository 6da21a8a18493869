// Library registrations and their undoing.
#include "eager/dispatch/Library.h"

#include <sstream>

#include "eager/core/Error.h"

namespace kiln {

Library::Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file, int line)
    : kind_(kind), ns_(std::move(ns)), key_(key), where_(std::string(file) + ":" + std::to_string(line)) {
  KILN_CHECK(kind_ == Kind::Impl || !key_.has_value(), "only KILN_LIBRARY_IMPL libraries take a dispatch key");
}

Library::Library(Library&& other) noexcept
    : kind_(other.kind_),
      ns_(std::move(other.ns_)),
      key_(other.key_),
      where_(std::move(other.where_)),
      undo_(std::move(other.undo_)) {
  other.undo_.clear();
}

Library::~Library() {
  // Undo in reverse order: kernels before the definitions they belong to.
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
}

std::string Library::schema_name(std::string_view schema) {
  const size_t paren = schema.find('(');
  std::string_view head = schema.substr(0, paren);
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  return std::string(head);
}

OperatorName Library::resolve_name(std::string_view name) const {
  OperatorName out;
  std::string_view rest = name;
  if (const size_t sep = rest.find("::"); sep != std::string_view::npos) {
    out.ns = std::string(rest.substr(0, sep));
    rest = rest.substr(sep + 2);
    KILN_CHECK(out.ns == ns_, "Library(", ns_, ") at ", where_, " cannot register '", name,
               "' of another namespace");
  } else {
    out.ns = ns_;
  }
  if (const size_t dot = rest.find('.'); dot != std::string_view::npos) {
    out.name = std::string(rest.substr(0, dot));
    out.overload = std::string(rest.substr(dot + 1));
  } else {
    out.name = std::string(rest);
  }
  return out;
}

Library& Library::def(std::string_view schema_text, std::vector<std::string> tags) {
  KILN_CHECK(kind_ != Kind::Impl, "Library at ", where_, ": def() needs a KILN_LIBRARY or KILN_LIBRARY_FRAGMENT");
  FunctionSchema schema = FunctionSchema::parse(schema_text, ns_);
  KILN_CHECK(schema.name().ns == ns_, "Library(", ns_, ") at ", where_, " cannot define '", schema.name().str(),
             "' of another namespace");
  const OperatorName name = schema.name();
  Dispatcher::singleton().register_def(std::move(schema), std::move(tags));
  undo_.emplace_back([name] { Dispatcher::singleton().deregister_def(name); });
  return *this;
}

Library& Library::impl_kernel(std::string_view name, DispatchKey key, KernelFunction kernel,
                              void (*check)(const FunctionSchema&)) {
  const OperatorName op = resolve_name(name);
  if (check != nullptr) {
    if (auto handle = Dispatcher::singleton().find_op(op.ns + "::" + op.name, op.overload);
        handle && handle->entry().has_schema()) {
      check(handle->schema());
    }
  }
  Dispatcher::singleton().register_impl(op, key, kernel);
  undo_.emplace_back([op, key] { Dispatcher::singleton().deregister_impl(op, key); });
  return *this;
}

Library& Library::fallback(KernelFunction kernel) {
  KILN_CHECK(kind_ == Kind::Impl && key_.has_value(), "Library at ", where_,
             ": fallback() needs KILN_LIBRARY_IMPL(_, Key, m)");
  const DispatchKey key = *key_;
  Dispatcher::singleton().register_fallback(key, kernel);
  undo_.emplace_back([key] { Dispatcher::singleton().deregister_fallback(key); });
  return *this;
}

void Library::check_signature_shape(const FunctionSchema& schema, const std::vector<bool>& cpp_is_tensor,
                                    const char* cpp_signature) {
  const auto& args = schema.arguments();
  KILN_CHECK(args.size() == cpp_is_tensor.size(), "kernel for ", schema.name().str(), " takes ",
             cpp_is_tensor.size(), " arguments but the schema '", schema.str(), "' has ", args.size(),
             " (C++ signature ", cpp_signature, ")");
  for (size_t i = 0; i < args.size(); ++i) {
    const bool schema_tensor = args[i].type.kind == SchemaType::Kind::Tensor;
    KILN_CHECK(schema_tensor == cpp_is_tensor[i], "kernel for ", schema.name().str(), ": argument ", i, " ('",
               args[i].name, "') is ", args[i].type.str(), " in the schema but ",
               cpp_is_tensor[i] ? "a tensor" : "not a tensor", " in the C++ signature ", cpp_signature);
  }
}

}  // namespace kiln

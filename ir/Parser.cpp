// Parser: tokens -> Graph, one statement per line.
#include "ir/Parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "ir/ArgumentBinding.h"
#include "ir/Lexer.h"

namespace kiln::ir {

namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : tokens_(tokenize(text)), graph_(std::make_unique<Graph>()) {}

  std::unique_ptr<Graph> run() {
    skip_newlines();
    expect_ident("graph");
    expect_punct("(");
    if (!peek().is_punct(")")) {
      do {
        const Token name = expect(Token::Kind::ValueRef, "a value name like %x");
        expect_punct(":");
        define(name, graph_->add_input(parse_type()));
      } while (accept_punct(","));
    }
    expect_punct(")");
    expect_punct(":");
    end_of_statement();
    while (true) {
      skip_newlines();
      if (peek().is(Token::Kind::Ident, "return")) break;
      if (peek().kind == Token::Kind::End) fail(peek(), "expected a 'return' statement before the end of the text");
      parse_node();
      end_of_statement();
    }
    next();  // return
    expect_punct("(");
    if (!peek().is_punct(")")) {
      do {
        graph_->add_output(use(expect(Token::Kind::ValueRef, "a value like %x")));
      } while (accept_punct(","));
    }
    expect_punct(")");
    skip_newlines();
    if (peek().kind != Token::Kind::End) fail(peek(), "expected the end of the text after 'return', found " +
                                                         describe(peek()));
    return std::move(graph_);
  }

 private:
  // --- token plumbing ------------------------------------------------------------
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  [[noreturn]] static void fail(const Token& at, const std::string& problem) {
    throw ParseError(at.line, at.column, problem);
  }
  const Token& expect(Token::Kind k, const char* what) {
    if (peek().kind != k) fail(peek(), std::string("expected ") + what + " but found " + describe(peek()));
    return next();
  }
  void expect_punct(std::string_view p) {
    if (!peek().is_punct(p)) fail(peek(), "expected '" + std::string(p) + "' but found " + describe(peek()));
    next();
  }
  void expect_ident(std::string_view word) {
    if (!peek().is(Token::Kind::Ident, word))
      fail(peek(), "expected '" + std::string(word) + "' but found " + describe(peek()));
    next();
  }
  bool accept_punct(std::string_view p) {
    if (!peek().is_punct(p)) return false;
    next();
    return true;
  }
  void skip_newlines() {
    while (peek().kind == Token::Kind::Newline) next();
  }
  void end_of_statement() {
    if (peek().kind != Token::Kind::Newline && peek().kind != Token::Kind::End)
      fail(peek(), "expected the end of the line but found " + describe(peek()));
  }

  // --- values --------------------------------------------------------------------
  void define(const Token& name, Value* v) {
    if (!all_digits(name.text) && !is_identifier(name.text))
      fail(name, "a value name is a number or an identifier, not '%" + name.text + "'");
    if (values_.contains(name.text)) fail(name, "value %" + name.text + " is defined twice");
    values_.emplace(name.text, v);
    if (!all_digits(name.text)) graph_->set_name(v, name.text);
  }
  Value* use(const Token& name) {
    auto it = values_.find(name.text);
    if (it == values_.end()) fail(name, "value %" + name.text + " is used before it is defined");
    return it->second;
  }

  // --- numbers -------------------------------------------------------------------
  static int64_t to_int(const Token& t) {
    int64_t v = 0;
    const char* end = t.text.data() + t.text.size();
    const auto [ptr, ec] = std::from_chars(t.text.data(), end, v);
    if (ec != std::errc() || ptr != end) fail(t, "integer " + t.text + " is out of range");
    return v;
  }
  static double to_float(const Token& t) {
    if (t.kind == Token::Kind::Int) return static_cast<double>(to_int(t));
    if (t.text == "inf") return std::numeric_limits<double>::infinity();
    if (t.text == "-inf") return -std::numeric_limits<double>::infinity();
    if (t.text == "nan") return std::numeric_limits<double>::quiet_NaN();
    double v = 0;
    const char* end = t.text.data() + t.text.size();
    const auto [ptr, ec] = std::from_chars(t.text.data(), end, v);
    if (ec != std::errc() || ptr != end) fail(t, "float " + t.text + " is out of range");
    return v;
  }
  static bool is_float_token(const Token& t) {
    return t.kind == Token::Kind::Float || t.is(Token::Kind::Ident, "inf") || t.is(Token::Kind::Ident, "nan");
  }

  // --- types ---------------------------------------------------------------------
  SymbolicSize parse_dim() {
    const Token& t = next();
    if (t.kind == Token::Kind::Ident) return SymbolicSize::symbol(t.text);
    if (t.kind != Token::Kind::Int) fail(t, "expected a size (a number or a symbol like s0) but found " + describe(t));
    const int64_t v = to_int(t);
    if (v < 0) fail(t, "a size must be non-negative, got " + t.text);
    return SymbolicSize(v);
  }
  std::vector<SymbolicSize> parse_dims(std::string_view close) {
    std::vector<SymbolicSize> dims;
    if (accept_punct(close)) return dims;
    do {
      dims.push_back(parse_dim());
    } while (accept_punct(","));
    expect_punct(close);
    return dims;
  }
  Device parse_device() {
    const Token& t = expect(Token::Kind::Ident, "a device like cpu or cuda:0");
    std::string spec = t.text;
    if (peek().is_punct(":") && peek(1).kind == Token::Kind::Int) {
      next();
      spec += ":" + next().text;
    }
    if (t.text != "cpu" && t.text != "cuda") fail(t, "expected a device like cpu or cuda:0 but found " + describe(t));
    try {
      return Device(spec);
    } catch (const Error& e) {
      fail(t, e.what());
    }
  }
  Type parse_type() {
    const Token& t = peek();
    Type type;
    std::optional<DType> dtype;
    if (t.is_punct("?") || (t.kind == Token::Kind::Ident && (dtype = dtype_from_short_name(t.text)))) {
      next();
      TensorType tt;
      tt.dtype = dtype;
      expect_punct("[");
      if (!accept_punct("*")) tt.sizes = parse_dims("]");
      else expect_punct("]");
      if (accept_punct("{")) tt.strides = parse_dims("}");
      type = parse_tensor_suffix(std::move(tt));
    } else if (t.is(Token::Kind::Ident, "Tensor")) {
      next();
      type = parse_tensor_suffix(TensorType{});
    } else {
      static const std::pair<const char*, Type::Kind> kNames[] = {
          {"int", Type::Kind::Int},         {"float", Type::Kind::Float},   {"bool", Type::Kind::Bool},
          {"complex", Type::Kind::Complex}, {"Scalar", Type::Kind::Scalar}, {"str", Type::Kind::Str},
          {"None", Type::Kind::None},       {"ScalarType", Type::Kind::ScalarType},
          {"Device", Type::Kind::Device},   {"Generator", Type::Kind::Generator}};
      bool found = false;
      for (const auto& [name, kind] : kNames) {
        if (t.is(Token::Kind::Ident, name)) {
          found = true;
          type = base_type(kind);
        }
      }
      if (!found) fail(t, "expected a type but found " + describe(t));
      next();
    }
    while (true) {
      if (peek().is_punct("[") && peek(1).is_punct("]")) {
        next();
        next();
        type = Type::list(type);
      } else if (accept_punct("?")) {
        type = Type::optional(type);
      } else {
        return type;
      }
    }
  }
  static Type base_type(Type::Kind k) {
    switch (k) {
      case Type::Kind::Int: return Type::int_type();
      case Type::Kind::Float: return Type::float_type();
      case Type::Kind::Bool: return Type::bool_type();
      case Type::Kind::Complex: return Type::complex_type();
      case Type::Kind::Scalar: return Type::scalar_type();
      case Type::Kind::Str: return Type::str_type();
      case Type::Kind::ScalarType: return Type::scalar_type_type();
      case Type::Kind::Device: return Type::device_type();
      case Type::Kind::Generator: return Type::generator_type();
      default: return Type::none_type();
    }
  }
  Type parse_tensor_suffix(TensorType tt) {
    if (accept_punct("@")) tt.device = parse_device();
    if (peek().is(Token::Kind::Ident, "requires_grad")) {
      next();
      tt.requires_grad = true;
    }
    return Type::tensor(std::move(tt));
  }

  // --- literals ------------------------------------------------------------------
  Attribute parse_literal() {
    const Token& t = peek();
    if (t.kind == Token::Kind::Int) return Attribute::of_int(to_int(next()));
    if (is_float_token(t)) return Attribute::of_float(to_float(next()));
    if (t.kind == Token::Kind::String) return Attribute::of_str(next().text);
    if (t.is_punct("[")) return parse_list();
    if (t.kind != Token::Kind::Ident) fail(t, "expected a value or a literal but found " + describe(t));
    if (t.text == "None") return next(), Attribute::none();
    if (t.text == "True") return next(), Attribute::of_bool(true);
    if (t.text == "False") return next(), Attribute::of_bool(false);
    if (t.text == "cpu" || t.text == "cuda") return Attribute::of_device(parse_device());
    if (t.text == "complex") {
      next();
      expect_punct("(");
      const double re = to_float(expect_number());
      expect_punct(",");
      const double im = to_float(expect_number());
      expect_punct(")");
      return Attribute::of_complex({re, im});
    }
    for (int i = 0; i < kNumDTypes; ++i) {
      if (dtype_name(static_cast<DType>(i)) == t.text) return next(), Attribute::of_dtype(static_cast<DType>(i));
    }
    fail(t, "expected a literal but found " + describe(t));
  }
  const Token& expect_number() {
    const Token& t = peek();
    if (t.kind != Token::Kind::Int && !is_float_token(t)) fail(t, "expected a number but found " + describe(t));
    return next();
  }
  Attribute parse_list() {
    const Token& open = next();
    std::vector<Token> items;
    if (!peek().is_punct("]")) {
      do {
        items.push_back(next());
      } while (accept_punct(","));
    }
    expect_punct("]");
    if (items.empty()) return Attribute::of_int_list({});
    const Token& first = items.front();
    if (first.kind == Token::Kind::Int) {
      std::vector<int64_t> v;
      for (const Token& t : items) {
        if (t.kind != Token::Kind::Int) fail(t, "an int list holds only ints, found " + describe(t));
        v.push_back(to_int(t));
      }
      return Attribute::of_int_list(std::move(v));
    }
    if (is_float_token(first)) {
      std::vector<double> v;
      for (const Token& t : items) {
        if (!is_float_token(t)) fail(t, "a float list holds only floats, found " + describe(t));
        v.push_back(to_float(t));
      }
      return Attribute::of_float_list(std::move(v));
    }
    if (first.is(Token::Kind::Ident, "True") || first.is(Token::Kind::Ident, "False")) {
      std::vector<bool> v;
      for (const Token& t : items) {
        if (!t.is(Token::Kind::Ident, "True") && !t.is(Token::Kind::Ident, "False"))
          fail(t, "a bool list holds only True and False, found " + describe(t));
        v.push_back(t.text == "True");
      }
      return Attribute::of_bool_list(std::move(v));
    }
    fail(open, "a list literal holds ints, floats or bools, found " + describe(first));
  }

  // --- nodes ---------------------------------------------------------------------
  Node* parse_kind() {
    const Token& ns = expect(Token::Kind::Ident, "an operator name like kiln::add.Tensor");
    expect_punct("::");
    const Token& name = expect(Token::Kind::Ident, "an operator name after '::'");
    if (ns.text == "prim") {
      const std::optional<NodeKind> k = structural_kind_from_name("prim::" + name.text);
      if (!k) fail(name, "unknown structural kind prim::" + name.text);
      if (*k == NodeKind::Param || *k == NodeKind::Return)
        fail(name, "prim::" + name.text + " is written as the graph's header and return line");
      return graph_->create(*k);
    }
    std::string overload;
    if (accept_punct(".")) overload = expect(Token::Kind::Ident, "an overload name after '.'").text;
    const std::string qualified = ns.text + "::" + name.text;
    const std::optional<OperatorHandle> op = Dispatcher::singleton().find_op(qualified, overload);
    if (!op || !op->entry().has_schema())
      fail(ns, "unknown operator " + qualified + (overload.empty() ? "" : "." + overload));
    return graph_->create(NodeKind::Op, *op);
  }

  void parse_node() {
    std::vector<std::pair<Token, Type>> outputs;
    if (peek().kind == Token::Kind::ValueRef) {
      do {
        const Token name = expect(Token::Kind::ValueRef, "a value name like %x");
        expect_punct(":");
        outputs.emplace_back(name, parse_type());
      } while (accept_punct(","));
      expect_punct("=");
    }
    const Token& kind_token = peek();
    Node* n = parse_kind();
    expect_punct("(");
    std::vector<std::pair<Token, Value*>> keyword_values;  // name=%v, checked against the binding below
    bool keyword = false;
    if (!peek().is_punct(")")) {
      do {
        if (peek().kind == Token::Kind::ValueRef) {
          if (keyword) fail(peek(), "a positional value after keyword arguments");
          n->add_input(use(next()));
          continue;
        }
        const Token& name = expect(Token::Kind::Ident, "a value or name=literal");
        keyword = true;
        expect_punct("=");
        if (n->attribute(name.text) != nullptr) fail(name, "argument '" + name.text + "' is given twice");
        for (const auto& [other, v] : keyword_values)
          if (other.text == name.text) fail(name, "argument '" + name.text + "' is given twice");
        if (peek().kind == Token::Kind::ValueRef) {
          if (n->kind() != NodeKind::Op) fail(name, "only an operator takes a value by name");
          Value* v = use(next());
          n->add_input(v);
          keyword_values.emplace_back(name, v);
        } else {
          n->set_attribute(name.text, parse_literal());
        }
      } while (accept_punct(","));
    }
    expect_punct(")");
    if (!keyword_values.empty()) check_keyword_values(*n, kind_token, keyword_values);
    for (auto& [name, type] : outputs) define(name, n->add_output(std::move(type)));
    graph_->append(n);
  }

  /// `name=%v` must bind %v to the argument called name (inputs bind in schema order).
  void check_keyword_values(const Node& n, const Token& at, const std::vector<std::pair<Token, Value*>>& given) {
    std::string why;
    const auto binding = bind_arguments(n, &why);
    if (!binding) fail(at, n.kind_name() + ": " + why);
    const auto& args = n.op().schema().arguments();
    const size_t first_keyword_input = n.inputs().size() - given.size();
    for (size_t i = 0; i < binding->size(); ++i) {
      const ArgumentSource& s = (*binding)[i];
      if (s.is_attribute || s.index < first_keyword_input) continue;
      const Token& name = given[s.index - first_keyword_input].first;
      if (name.text != args[i].name)
        fail(name, "argument '" + name.text + "' is out of schema order (this value binds to '" + args[i].name + "')");
    }
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::unique_ptr<Graph> graph_;
  std::unordered_map<std::string, Value*> values_;
};

}  // namespace

std::unique_ptr<Graph> parse(std::string_view text) { return Parser(text).run(); }

}  // namespace kiln::ir

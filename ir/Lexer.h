// Lexer: splits the IR's text form into tokens with their line and column.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::ir {

struct Token {
  enum class Kind : uint8_t {
    Ident,     // graph, kiln, add, f32, s0, True, None, inf, requires_grad
    ValueRef,  // %x, %12 (text holds what follows '%')
    Int,       // 3, -1 (text as written)
    Float,     // 1.5, -2e-05, -inf (text as written)
    String,    // "a\"b" (text holds the decoded bytes)
    Punct,     // ( ) [ ] { } , = : :: ? @ * .
    Newline,
    End,
  };
  Kind kind;
  std::string text;
  size_t line;
  size_t column;

  [[nodiscard]] bool is(Kind k, std::string_view t) const { return kind == k && text == t; }
  [[nodiscard]] bool is_punct(std::string_view t) const { return is(Kind::Punct, t); }
};

/// Every token of `text`, ending with End. Comments (# to end of line) are
/// skipped. ParseError for a byte that starts no token, a bad number, or a
/// bad or unterminated string.
[[nodiscard]] std::vector<Token> tokenize(std::string_view text);

/// "identifier 'foo'", "',' ", "end of line", ... (for error messages).
[[nodiscard]] std::string describe(const Token& t);

}  // namespace kiln::ir

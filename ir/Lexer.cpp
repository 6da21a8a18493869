// Lexer: text -> tokens.
#include "ir/Lexer.h"

#include "ir/ParseError.h"

namespace kiln::ir {

namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      skip_blanks();
      const size_t line = line_, column = column_;
      if (pos_ >= text_.size()) {
        out.push_back({Token::Kind::End, "", line, column});
        return out;
      }
      const char c = text_[pos_];
      if (c == '\n') {
        advance();
        out.push_back({Token::Kind::Newline, "", line, column});
      } else if (is_alpha(c)) {
        out.push_back({Token::Kind::Ident, take_word(), line, column});
      } else if (c == '%') {
        advance();
        std::string name = take_word();
        if (name.empty()) throw ParseError(line, column, "expected a value name after '%'");
        out.push_back({Token::Kind::ValueRef, std::move(name), line, column});
      } else if (is_digit(c) || (c == '-' && pos_ + 1 < text_.size() && (is_digit(text_[pos_ + 1]) ||
                                                                         text_.substr(pos_ + 1, 3) == "inf"))) {
        out.push_back(number(line, column));
      } else if (c == '"') {
        out.push_back({Token::Kind::String, string(line, column), line, column});
      } else if (c == ':' && pos_ + 1 < text_.size() && text_[pos_ + 1] == ':') {
        advance();
        advance();
        out.push_back({Token::Kind::Punct, "::", line, column});
      } else if (std::string_view("()[]{},=:?@*.").find(c) != std::string_view::npos) {
        advance();
        out.push_back({Token::Kind::Punct, std::string(1, c), line, column});
      } else {
        throw ParseError(line, column, "unexpected character " + printable(c));
      }
    }
  }

 private:
  static std::string printable(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
    static const char* kHex = "0123456789abcdef";
    return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
  }

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  void skip_blanks() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else {
        return;
      }
    }
  }

  std::string take_word() {
    const size_t start = pos_;
    while (pos_ < text_.size() && (is_alpha(text_[pos_]) || is_digit(text_[pos_]))) advance();
    return std::string(text_.substr(start, pos_ - start));
  }

  Token number(size_t line, size_t column) {
    const size_t start = pos_;
    if (text_[pos_] == '-') advance();
    if (text_.substr(pos_, 3) == "inf") {
      for (int i = 0; i < 3; ++i) advance();
      return {Token::Kind::Float, "-inf", line, column};
    }
    bool is_float = false;
    while (pos_ < text_.size() && is_digit(text_[pos_])) advance();
    if (pos_ < text_.size() && text_[pos_] == '.') {
      is_float = true;
      advance();
      while (pos_ < text_.size() && is_digit(text_[pos_])) advance();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      is_float = true;
      advance();
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) advance();
      const size_t digits = pos_;
      while (pos_ < text_.size() && is_digit(text_[pos_])) advance();
      if (pos_ == digits) throw ParseError(line, column, "malformed number: exponent without digits");
    }
    if (pos_ < text_.size() && is_alpha(text_[pos_]))
      throw ParseError(line_, column_, "malformed number: unexpected " + printable(text_[pos_]));
    return {is_float ? Token::Kind::Float : Token::Kind::Int, std::string(text_.substr(start, pos_ - start)), line,
            column};
  }

  std::string string(size_t line, size_t column) {
    advance();  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') throw ParseError(line, column, "unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        advance();
        return out;
      }
      if (c != '\\') {
        out += c;
        advance();
        continue;
      }
      const size_t esc_line = line_, esc_column = column_;
      advance();
      if (pos_ >= text_.size()) throw ParseError(line, column, "unterminated string");
      const char e = text_[pos_];
      advance();
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x': {
          const int hi = pos_ < text_.size() ? hex_value(text_[pos_]) : -1;
          const int lo = pos_ + 1 < text_.size() ? hex_value(text_[pos_ + 1]) : -1;
          if (hi < 0 || lo < 0) throw ParseError(esc_line, esc_column, "\\x needs two hex digits");
          advance();
          advance();
          out += static_cast<char>(hi * 16 + lo);
          break;
        }
        default: throw ParseError(esc_line, esc_column, std::string("unknown escape \\") + printable(e));
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t line_ = 1;
  size_t column_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view text) { return Lexer(text).run(); }

std::string describe(const Token& t) {
  switch (t.kind) {
    case Token::Kind::Ident: return "'" + t.text + "'";
    case Token::Kind::ValueRef: return "'%" + t.text + "'";
    case Token::Kind::Int:
    case Token::Kind::Float: return "number " + t.text;
    case Token::Kind::String: return "a string";
    case Token::Kind::Punct: return "'" + t.text + "'";
    case Token::Kind::Newline: return "end of line";
    case Token::Kind::End: return "end of text";
  }
  return "?";
}

}  // namespace kiln::ir

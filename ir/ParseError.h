// ParseError: the kiln error the IR parser raises, with the line and column
// (both 1-based) of the text where the problem is.
#pragma once

#include <string>

#include "eager/core/Error.h"

namespace kiln::ir {

/// A RuntimeError at the Python boundary; what() reads
/// "ir parse error at line 3, column 14: expected ')' but found ','".
class ParseError : public Error {
 public:
  ParseError(size_t line, size_t column, const std::string& problem)
      : Error(ErrorKind::Runtime, "ir parse error at line " + std::to_string(line) + ", column " +
                                      std::to_string(column) + ": " + problem),
        text_line_(line),
        text_column_(column),
        problem_(problem) {}

  [[nodiscard]] size_t text_line() const { return text_line_; }
  [[nodiscard]] size_t text_column() const { return text_column_; }
  /// The message without the position.
  [[nodiscard]] const std::string& problem() const { return problem_; }

 private:
  size_t text_line_;
  size_t text_column_;
  std::string problem_;
};

}  // namespace kiln::ir

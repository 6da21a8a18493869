// The IR's text form: a table of graphs that round-trip exactly through the
// printer and parser, the parser's errors with their line and column, and a
// deterministic fuzz loop over mutated texts (only a verified graph or a
// kiln error may come out).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "eager/core/Error.h"
#include "ir/Clone.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

using namespace kiln;
using namespace kiln::ir;

namespace {

// Every text here is already in printed form, so print(parse(text)) == text
// checks both directions at once.
const char* const kRoundTripGraphs[] = {
    // elementwise, an inline Scalar, a named and an unnamed value
    "graph(%x : f32[2, 3], %y : f32[2, 3]):\n"
    "  %0 : f32[2, 3] = kiln::add.Tensor(%x, %y, alpha=1)\n"
    "  %z : f32[2, 3] = kiln::mul.Tensor(%0, %y)\n"
    "  return (%z)\n",
    // symbolic sizes, strides, device, requires_grad, unknown dtype / rank
    "graph(%a : f32[s0, 4]{4, 1} requires_grad, %b : ?[s0, 4], %c : i64[*]@cuda:1, %d : Tensor):\n"
    "  %0 : Tensor = kiln::relu(%a)\n"
    "  %1 : bf16[]@cuda = kiln::relu(%b)\n"
    "  return (%0, %1, %c, %d)\n",
    // constants of every kind, one unused
    "graph():\n"
    "  %0 : int = prim::Constant(value=-3)\n"
    "  %1 : float = prim::Constant(value=2.5)\n"
    "  %2 : float = prim::Constant(value=1e-05)\n"
    "  %3 : float = prim::Constant(value=-inf)\n"
    "  %4 : float = prim::Constant(value=nan)\n"
    "  %5 : bool = prim::Constant(value=True)\n"
    "  %6 : str = prim::Constant(value=\"a \\\"quoted\\\"\\n\\x01 string\")\n"
    "  %7 : int[] = prim::Constant(value=[1, -2, 3])\n"
    "  %8 : int[] = prim::Constant(value=[])\n"
    "  %9 : float[] = prim::Constant(value=[0.5, 1.0, -0.0])\n"
    "  %10 : bool[] = prim::Constant(value=[True, False])\n"
    "  %11 : ScalarType = prim::Constant(value=bfloat16)\n"
    "  %12 : Device = prim::Constant(value=cuda:0)\n"
    "  %13 : Device = prim::Constant(value=cpu)\n"
    "  %14 : None = prim::Constant(value=None)\n"
    "  %15 : complex = prim::Constant(value=complex(1.0, -2.5))\n"
    "  %16 : float = prim::Constant(value=1.0000000000000002)\n"
    "  %17 : int = prim::Constant(value=9223372036854775807)\n"
    "  return (%0, %5)\n",
    // multi-output op, one output unused; keyword values after a literal
    "graph(%x : f32[4, 5]):\n"
    "  %values : f32[4, 5], %indices : i64[4, 5] = kiln::sort(%x, dim=-1, descending=True)\n"
    "  %0 : f32[4], %1 : i64[4] = kiln::max.dim(%values, dim=1, keepdim=False)\n"
    "  return (%0)\n",
    // optional arguments as None and as values by name; ScalarType and Device literals
    "graph(%x : f32[2, 4], %w : f32[4], %b : f32[4]):\n"
    "  %0 : f32[2, 4], %1 : f32[2, 1], %2 : f32[2, 1] = kiln::native_layer_norm(%x, normalized_shape=[4], weight=%w, "
    "bias=None, eps=1e-05)\n"
    "  %3 : f32[2, 4], %4 : f32[2, 1], %5 : f32[2, 1] = kiln::native_layer_norm(%x, normalized_shape=[4], "
    "weight=None, bias=%b, eps=1e-05)\n"
    "  %6 : f64[2, 3] = kiln::zeros(size=[2, 3], dtype=float64, device=cpu)\n"
    "  %7 : f32[] = kiln::sum(%x, dtype=None)\n"
    "  %8 : f32[2, 4] = kiln::clamp(%x, min=-0.5, max=None)\n"
    "  return (%0, %3, %6, %7, %8)\n",
    // lists: construction of tensors and symbolic ints, unpacking an op's list result
    "graph(%x : f32[s0, 3], %n : int):\n"
    "  %0 : Tensor[] = prim::ListConstruct(%x, %x)\n"
    "  %1 : f32[s1, 3] = kiln::cat(%0, dim=0)\n"
    "  %2 : int[] = prim::ListConstruct(%n, %n)\n"
    "  %3 : Tensor = kiln::reshape(%1, %2)\n"
    "  %4 : Tensor[] = kiln::unbind.int(%3, dim=0)\n"
    "  %5 : Tensor, %6 : Tensor = prim::ListUnpack(%4)\n"
    "  return (%5, %6)\n",
    // optional-tensor lists and no outputs at all
    "graph(%x : f32[5], %i : i64[2]):\n"
    "  %0 : Tensor?[] = prim::ListConstruct(%i)\n"
    "  %1 : f32[2] = kiln::index.Tensor(%x, %0)\n"
    "  return ()\n",
    // the example of ir/README.md
    "graph(%x : f32[s0, 4]{4, 1} requires_grad, %w : f32[4], %n : int):\n"
    "  %0 : f32[s0, 4] = kiln::add.Tensor(%x, %x, alpha=2)\n"
    "  %y : f32[s0, 4], %1 : f32[s0, 1], %2 : f32[s0, 1] = kiln::native_layer_norm(%0, normalized_shape=[4], "
    "weight=%w, bias=None, eps=1e-05)\n"
    "  %three : int = prim::Constant(value=3)\n"
    "  %shape : int[] = prim::ListConstruct(%n, %three)\n"
    "  %r : Tensor = kiln::reshape(%y, %shape)\n"
    "  %values : f32[s0, 4], %indices : i64[s0, 4] = kiln::sort(%y, dim=-1, descending=True)\n"
    "  return (%r, %values)\n",
    // an empty graph and a pass-through
    "graph():\n"
    "  return ()\n",
    "graph(%x : c64[1]{1}):\n"
    "  return (%x, %x)\n",
};

std::string error_of(std::string_view text) {
  try {
    auto g = parse(text);
    verify(*g);
  } catch (const ParseError& e) {
    return "parse: " + std::string(e.what());
  } catch (const Error& e) {
    return "verify: " + std::string(e.what());
  }
  return "(no error)";
}

}  // namespace

TEST(IrText, RoundTripsEveryTableGraphExactly) {
  for (const char* text : kRoundTripGraphs) {
    SCOPED_TRACE(text);
    auto g = parse(text);
    EXPECT_NO_THROW(verify(*g));
    const std::string printed = print(*g);
    EXPECT_EQ(printed, text);
    EXPECT_EQ(print(*parse(printed)), printed);
    EXPECT_EQ(print(*clone(*g)), printed);
  }
}

TEST(IrText, NormalisesWhitespaceCommentsAndArgumentOrder) {
  const char* messy =
      "# a comment line\n"
      "\n"
      "graph( %x : f32[2] ,%y:f32[2] ) :   # trailing comment\n"
      "  %s:f32[2]=kiln::add.Tensor(%x,%y,alpha=2)\n"
      "\n"
      "  %t : f32[2] = kiln::clamp(%s, max=1.0, min=0)\n"
      "  return (%t)";
  const char* canonical =
      "graph(%x : f32[2], %y : f32[2]):\n"
      "  %s : f32[2] = kiln::add.Tensor(%x, %y, alpha=2)\n"
      "  %t : f32[2] = kiln::clamp(%s, min=0, max=1.0)\n"
      "  return (%t)\n";
  EXPECT_EQ(print(*parse(messy)), canonical);
}

TEST(IrText, UnnamedValuesAreNumberedInDefinitionOrder) {
  const char* text =
      "graph(%7 : f32[2]):\n"
      "  %42 : f32[2] = kiln::relu(%7)\n"
      "  %3 : f32[2] = kiln::relu(%42)\n"
      "  return (%3)\n";
  EXPECT_EQ(print(*parse(text)),
            "graph(%0 : f32[2]):\n"
            "  %1 : f32[2] = kiln::relu(%0)\n"
            "  %2 : f32[2] = kiln::relu(%1)\n"
            "  return (%2)\n");
}

struct ParseErrorCase {
  const char* text;
  size_t line;
  size_t column;
  const char* words;
};

TEST(IrText, ParserNamesLineAndColumnOfEachProblem) {
  const ParseErrorCase cases[] = {
      {"", 1, 1, "expected 'graph'"},
      {"graf():\n  return ()\n", 1, 1, "expected 'graph' but found 'graf'"},
      {"graph(%x : f32[2]\n  return (%x)\n", 1, 18, "expected ')'"},
      {"graph(%x : f99[2]):\n  return (%x)\n", 1, 12, "expected a type but found 'f99'"},
      {"graph(%x : f32[-2]):\n  return (%x)\n", 1, 16, "non-negative"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = kiln::relu(%y)\n  return (%0)\n", 2, 28, "%y is used before"},
      {"graph(%x : f32[2]):\n  %x : f32[2] = kiln::relu(%x)\n  return (%x)\n", 2, 3, "%x is defined twice"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = kiln::no_such_op(%x)\n  return (%0)\n", 2, 17,
       "unknown operator kiln::no_such_op"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = kiln::add.NoOverload(%x)\n  return (%0)\n", 2, 17,
       "unknown operator kiln::add.NoOverload"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = prim::Nope()\n  return (%0)\n", 2, 23, "unknown structural kind"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = kiln::relu(%x\n  return (%0)\n", 2, 30, "expected ')'"},
      {"graph(%x : f32[2]):\n  %0 : int = prim::Constant(value=\"abc)\n  return (%0)\n", 2, 35,
       "unterminated string"},
      {"graph(%x : f32[2]):\n  %0 : int = prim::Constant(value=99999999999999999999)\n  return (%0)\n", 2, 35,
       "out of range"},
      {"graph(%x : f32[2]):\n  %0 : int[] = prim::Constant(value=[1, 2.0])\n  return (%0)\n", 2, 41,
       "an int list holds only ints"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = kiln::add.Tensor(alpha=1, %x)\n  return (%0)\n", 2, 43,
       "positional value after keyword"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = kiln::add.Tensor(%x, alpha=1, alpha=2)\n  return (%0)\n", 2, 47,
       "'alpha' is given twice"},
      {"graph(%x : f32[2], %w : f32[2]):\n  %0 : Tensor = kiln::linear(%x, bias=%w, weight=%w)\n  return (%0)\n",
       2, 34, "'bias' is out of schema order"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = kiln::relu(%x) extra\n  return (%0)\n", 2, 32,
       "expected the end of the line"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = kiln::relu(%x)\n", 3, 1, "expected a 'return'"},
      {"graph(%x : f32[2]):\n  return (%x)\n  return (%x)\n", 3, 3, "expected the end of the text"},
      {"graph(%x : f32[2]@tpu):\n  return (%x)\n", 1, 19, "expected a device"},
      {"graph(%x : f32[2]@cuda:999):\n  return (%x)\n", 1, 19, "Invalid device string"},
      {"graph(%x : f32[2]):\n  %0 : f32[2] = kiln::relu(%x) $\n  return (%0)\n", 2, 32, "unexpected character '$'"},
      {"graph(%x : f32[2]):\n  %1a : f32[2] = kiln::relu(%x)\n  return (%1a)\n", 2, 3, "a value name is"},
      {"graph(%x : f32[2]):\n  prim::Param()\n  return ()\n", 2, 9, "graph's header"},
      {"graph(%x : f32[2]):\n  %0 : int = prim::Constant(value=\"\\q\")\n  return (%0)\n", 2, 36, "unknown escape"},
  };
  for (const ParseErrorCase& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      (void)parse(c.text);
      ADD_FAILURE() << "no error";
    } catch (const ParseError& e) {
      EXPECT_EQ(e.text_line(), c.line) << e.what();
      EXPECT_EQ(e.text_column(), c.column) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("line " + std::to_string(c.line) + ", column " + std::to_string(c.column)),
                std::string::npos)
          << e.what();
      EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    }
  }
}

TEST(IrText, ParsedButIllFormedGraphsFailVerification) {
  EXPECT_NE(error_of("graph(%x : f32[2]):\n  %0 : f32[2] = kiln::add.Tensor(%x)\n  return (%0)\n")
                .find("verify: ir verify: kiln::add.Tensor: expects 3 value arguments (self, other, alpha), got 1"),
            std::string::npos);
  EXPECT_NE(error_of("graph(%x : f32[2]):\n  %0 : f32[2] = kiln::relu(%x, inplace=True)\n  return (%0)\n")
                .find("unknown argument 'inplace'"),
            std::string::npos);
}

// Note [IR fuzzing]: mutations of valid texts must end in a verified graph or
// a kiln::Error; anything else (a crash, another exception, UB caught by the
// sanitizers) fails. Byte-level mutations (truncations, byte flips, inserted
// tokens, deletions) exercise the lexer and parser; line-level ones (a line
// deleted, duplicated or moved, a value reference swapped) produce texts that
// parse but break SSA or schemas, which exercises the verifier. The generator
// is seeded, so a failure reproduces.
namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l;
  return out;
}

void mutate_bytes(std::string& text, std::mt19937_64& rng) {
  static const std::vector<std::string> tokens = {
      "%",  "%0",     "%x",     "(",     ")",  "[",     "]",     ",",    "=",    ":",      "::",
      "?",  "@",      "*",      "{",     "}",  "\"",    "\\",    "\n",   "-",    "1e",     "-inf",
      "99999999999999999999",  "f32[",  "Tensor", "[]", "prim::", "kiln::add.Tensor", "None", "return",
      "graph", "s0", "cuda:", "complex(", "requires_grad", "\xff", "#"};
  const size_t at = rng() % (text.size() + 1);
  switch (rng() % 4) {
    case 0: text.resize(at); break;
    case 1:
      if (at < text.size()) text[at] = static_cast<char>(rng() % 256);
      break;
    case 2: text.insert(at, tokens[rng() % tokens.size()]); break;
    case 3: text.erase(at, 1 + rng() % 8); break;
  }
}

void mutate_lines(std::string& text, std::mt19937_64& rng) {
  std::vector<std::string> lines = split_lines(text);
  if (lines.size() < 2) return;
  const size_t i = rng() % lines.size();
  const size_t j = rng() % lines.size();
  switch (rng() % 6) {
    case 0: lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i)); break;
    case 1: lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), lines[j]); break;
    case 2: std::swap(lines[i], lines[j]); break;
    case 3: {  // point one value reference of line i at a value named on line j
      const size_t from = lines[i].find('%', rng() % (lines[i].size() + 1));
      const size_t to = lines[j].find('%');
      if (from == std::string::npos || to == std::string::npos) break;
      auto name_end = [](const std::string& l, size_t p) {
        size_t e = p + 1;
        while (e < l.size() && (std::isalnum(static_cast<unsigned char>(l[e])) || l[e] == '_')) ++e;
        return e;
      };
      const std::string name = lines[j].substr(to, name_end(lines[j], to) - to);
      lines[i].replace(from, name_end(lines[i], from) - from, name);
      break;
    }
    case 4:
    case 5: {  // retype one value: its annotation runs from " : " to the next ", %", " = " or ")"
      static const char* const kTypes[] = {"int", "Tensor", "f32[2]", "i64[*]{1}", "Tensor[]", "float",
                                           "b8[2] requires_grad", "int[]", "Tensor?[]", "None"};
      const size_t colon = lines[i].find(" : ", rng() % (lines[i].size() + 1));
      if (colon == std::string::npos) break;
      size_t end = lines[i].size();
      for (const char* stop : {", %", " = ", ")"}) end = std::min(end, lines[i].find(stop, colon + 3));
      lines[i].replace(colon + 3, end - colon - 3, kTypes[rng() % std::size(kTypes)]);
      break;
    }
  }
  text = join(lines);
}

}  // namespace

TEST(IrText, FuzzedTextsYieldAVerifiedGraphOrAKilnError) {
  std::mt19937_64 rng(20261206);
  int verified = 0, verify_errors = 0, parse_errors = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    std::string text = kRoundTripGraphs[rng() % std::size(kRoundTripGraphs)];
    const int mutations = 1 + static_cast<int>(rng() % 3);
    const bool by_lines = iter % 2 == 1;
    for (int m = 0; m < mutations; ++m) {
      if (by_lines) mutate_lines(text, rng);
      else mutate_bytes(text, rng);
    }
    std::unique_ptr<Graph> g;
    try {
      g = parse(text);
    } catch (const ParseError&) {
      ++parse_errors;
      continue;
    }
    try {
      verify(*g);
    } catch (const Error&) {
      ++verify_errors;
      (void)print(*g);  // a broken graph still prints
      continue;
    }
    // A graph that verifies round-trips exactly.
    const std::string printed = print(*g);
    ASSERT_EQ(print(*parse(printed)), printed) << "from mutated text:\n" << text;
    ++verified;
  }
  RecordProperty("verified_graphs", verified);
  RecordProperty("verify_errors", verify_errors);
  RecordProperty("parse_errors", parse_errors);
  EXPECT_GT(verified, 100);
  EXPECT_GT(verify_errors, 100);
  EXPECT_GT(parse_errors, 100);
}

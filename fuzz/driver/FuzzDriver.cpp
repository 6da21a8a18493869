// A stand-in for libFuzzer's main() where the compiler has no -fsanitize=fuzzer
// (GCC): it replays a corpus through LLVMFuzzerTestOneInput and then, for a
// bounded time or number of runs, feeds it seeded random mutations of the
// corpus. There is no coverage feedback: a mutation is kept only as the next
// input's starting point. The command line is libFuzzer's subset that
// scripts/fuzz.sh and ctest use, so a clang build of the same target takes the
// same arguments:
//
//   kiln_fuzz_<name> [-runs=N] [-max_total_time=S] [-seed=N] [-dict=FILE]
//                    [-artifact_prefix=DIR/] CORPUS_DIR_OR_FILE...
//
// -runs=0 only replays the corpus (ctest's regression run). A crash (a
// sanitizer report, a signal, an escaped exception) writes the input to
// <artifact_prefix>crash-<hash> and names the file on stderr; see fuzz/README.md.
#include <algorithm>
#include <csignal>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Provided by the ASan/UBSan runtime when linked; weak, so an unsanitized build links too.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

using Bytes = std::vector<uint8_t>;

// The input being run, for the crash handlers (which may not allocate).
const Bytes* g_current = nullptr;
char g_artifact_path[4096];

void write_current_input() {
  if (g_current == nullptr) return;
  const int fd = ::open(g_artifact_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  size_t done = 0;
  while (done < g_current->size()) {
    const ssize_t n = ::write(fd, g_current->data() + done, g_current->size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  static const char kMessage[] = "\nfuzz driver: the crashing input is in ";
  (void)!::write(2, kMessage, sizeof(kMessage) - 1);
  (void)!::write(2, g_artifact_path, std::strlen(g_artifact_path));
  (void)!::write(2, "\n", 1);
}

void on_signal(int signo) {
  write_current_input();
  std::signal(signo, SIG_DFL);
  std::raise(signo);
}

void on_terminate() {
  write_current_input();
  std::abort();
}

struct Options {
  int64_t runs = -1;            // -1: until max_total_time
  double max_total_time = 0.0;  // seconds; 0 with runs == -1 means replay only
  uint64_t seed = 1;
  std::string dict;
  std::string artifact_prefix = "./";
  std::vector<std::string> inputs;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&arg](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return arg.compare(0, n, flag) == 0 ? arg.c_str() + n : nullptr;
    };
    if (const char* v = value("-runs=")) options.runs = std::atoll(v);
    else if (const char* v = value("-max_total_time=")) options.max_total_time = std::atof(v);
    else if (const char* v = value("-seed=")) options.seed = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("-dict=")) options.dict = v;
    else if (const char* v = value("-artifact_prefix=")) options.artifact_prefix = v;
    else if (!arg.empty() && arg[0] == '-') std::cerr << "fuzz driver: ignoring flag " << arg << "\n";
    else options.inputs.push_back(arg);
  }
  return options;
}

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<Bytes> load_corpus(const std::vector<std::string>& inputs) {
  std::vector<std::filesystem::path> files;
  for (const std::string& input : inputs) {
    if (std::filesystem::is_directory(input)) {
      for (const auto& entry : std::filesystem::directory_iterator(input)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.emplace_back(input);
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<Bytes> corpus;
  for (const auto& file : files) corpus.push_back(read_file(file));
  return corpus;
}

/// libFuzzer's dictionary format: one "token" per line (optionally name="token"),
/// with \\, \" and \xNN escapes; '#' starts a comment line.
std::vector<Bytes> load_dictionary(const std::string& path) {
  std::vector<Bytes> tokens;
  if (path.empty()) return tokens;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t open = line.find('"');
    const size_t close = line.rfind('"');
    if (line.empty() || line[0] == '#' || open == std::string::npos || close <= open) continue;
    Bytes token;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close) {
        if (line[i + 1] == 'x' && i + 3 < close) {
          token.push_back(static_cast<uint8_t>(std::stoi(line.substr(i + 2, 2), nullptr, 16)));
          i += 3;
        } else {
          token.push_back(static_cast<uint8_t>(line[++i]));
        }
      } else {
        token.push_back(static_cast<uint8_t>(line[i]));
      }
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

/// One random edit of `data`: the mutations libFuzzer starts from, without its
/// coverage-guided choice among them.
void mutate(Bytes& data, const std::vector<Bytes>& corpus, const std::vector<Bytes>& dict,
            std::mt19937_64& rng) {
  auto pick = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const size_t at = pick(data.size() + 1);
  switch (rng() % 8) {
    case 0:  // flip a bit
      if (!data.empty()) data[pick(data.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
      break;
    case 1:  // a random byte
      if (!data.empty()) data[pick(data.size())] = static_cast<uint8_t>(rng());
      break;
    case 2:  // insert random bytes
      data.insert(data.begin() + static_cast<std::ptrdiff_t>(at), 1 + rng() % 4, static_cast<uint8_t>(rng()));
      break;
    case 3: {  // erase a range
      const size_t n = std::min(data.size() - std::min(at, data.size()), size_t{1} + rng() % 16);
      data.erase(data.begin() + static_cast<std::ptrdiff_t>(at), data.begin() + static_cast<std::ptrdiff_t>(at + n));
      break;
    }
    case 4:  // truncate
      data.resize(at);
      break;
    case 5: {  // duplicate a range of itself
      if (data.empty()) break;
      const size_t from = pick(data.size());
      const size_t n = 1 + pick(std::min<size_t>(data.size() - from, 32));
      const Bytes piece(data.begin() + static_cast<std::ptrdiff_t>(from),
                        data.begin() + static_cast<std::ptrdiff_t>(from + n));
      data.insert(data.begin() + static_cast<std::ptrdiff_t>(at), piece.begin(), piece.end());
      break;
    }
    case 6: {  // splice in a piece of another corpus entry
      const Bytes& other = corpus[pick(corpus.size())];
      if (other.empty()) break;
      const size_t from = pick(other.size());
      const size_t n = 1 + pick(other.size() - from);
      data.insert(data.begin() + static_cast<std::ptrdiff_t>(at), other.begin() + static_cast<std::ptrdiff_t>(from),
                  other.begin() + static_cast<std::ptrdiff_t>(from + n));
      break;
    }
    case 7:  // a dictionary token, inserted or overwriting
      if (!dict.empty()) {
        const Bytes& token = dict[pick(dict.size())];
        if (rng() % 2 == 0 || at + token.size() > data.size()) {
          data.insert(data.begin() + static_cast<std::ptrdiff_t>(at), token.begin(), token.end());
        } else {
          std::copy(token.begin(), token.end(), data.begin() + static_cast<std::ptrdiff_t>(at));
        }
      }
      break;
  }
}

void run_one(const Bytes& input) {
  g_current = &input;
  LLVMFuzzerTestOneInput(input.data(), input.size());
  g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  std::snprintf(g_artifact_path, sizeof(g_artifact_path), "%scrash-input", options.artifact_prefix.c_str());
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(write_current_input);
  std::set_terminate(on_terminate);
  for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(signo, on_signal);

  std::vector<Bytes> corpus = load_corpus(options.inputs);
  if (corpus.empty()) corpus.emplace_back();  // libFuzzer starts from the empty input too
  const std::vector<Bytes> dict = load_dictionary(options.dict);
  for (const Bytes& input : corpus) run_one(input);
  std::cerr << "fuzz driver: replayed " << corpus.size() << " corpus inputs\n";
  if (options.runs == 0 || (options.runs < 0 && options.max_total_time <= 0.0)) return 0;

  std::mt19937_64 rng(options.seed);
  const auto start = std::chrono::steady_clock::now();
  Bytes input;
  int64_t runs = 0;
  for (; options.runs < 0 || runs < options.runs; ++runs) {
    if ((runs & 63) == 0 && options.max_total_time > 0.0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= options.max_total_time) {
      break;
    }
    // Mostly a fresh corpus entry, sometimes the last mutant again (a deeper walk).
    if (runs == 0 || rng() % 4 != 0) input = corpus[rng() % corpus.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) mutate(input, corpus, dict, rng);
    if (input.size() > 4096) input.resize(4096);
    run_one(input);
  }
  std::cerr << "fuzz driver: " << runs << " mutated inputs (seed " << options.seed << "), no crash\n";
  return 0;
}

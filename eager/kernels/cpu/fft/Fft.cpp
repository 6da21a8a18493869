// The discrete Fourier transforms (eager/ops/fft.yaml) on FFTW.
//
// Note [FFTs on FFTW]
// -------------------
// FFTW 3 (Debian's libfftw3, single and double precision) computes every
// transform: its guru interface takes any number of transformed dims and any
// number of batch ("howmany") dims, each with its own input and output
// strides, so one plan covers a whole call. It was the one candidate here:
// Debian's other FFT library (KissFFT) is built for float only, and the
// PocketFFT that numpy and PyTorch use ships no headers. (FFTW is GPL-2+: a
// build of kiln that links it is distributed under the GPL.)
// - Plans are measured (FFTW_MEASURE, bounded to 1 s by fftw_set_timelimit) on
//   scratch buffers and cached by layout, then run on each call's arrays with
//   FFTW's new-array execute functions; a plan is made for its arrays' offset
//   from a 64-byte line (part of the cache key), so unaligned tensors (numpy's)
//   run in place instead of through an aligned copy. What the measuring learns (FFTW's
//   "wisdom") is saved to ~/.cache/kiln/fftw-wisdom-{float,double} (or
//   $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln; KILN_FFT_WISDOM=0 turns it off) and read
//   back by later processes, so a layout is measured once per machine, not once
//   per process. The bound was 0.2 s until wisdom persisted: 1 s finds better
//   plans for large transforms (2^20 points: 12.3 -> 6.6 ms; irfft of [64, 2049]:
//   463 -> 340 us) at a cost now paid once. FFTW_ESTIMATE, which plans from the sizes
//   alone, was 3-13x slower here: a 2^20-point complex64 transform took 28.8 ms
//   against torch's 11.9, the columns of a 256x256 one 0.93 ms against its rows'
//   0.07; measured, a 256x256 2-D transform went from 1.7 ms to 0.37 (the bound
//   at 0.05 s left it at 1.65, and 2 s found no better plan than 0.2 s does for
//   it but took 2.2 s to plan 2^20 points). Planning is not thread-safe in FFTW;
//   a mutex serialises it, and executing a made plan is. Transforms of 2^19
//   elements or more run on kiln's thread count through FFTW's threads library
//   (plans are cached per thread count). Smaller batches of 2^15 elements or more
//   split their largest batch dim over kiln's threads, each run on a one-thread
//   plan: FFTW's threads did not speed these up (rfft of [64, 4096]: 360 us on one
//   thread, 371 on two), the split halves them (167 us; torch 168).
// - Inputs are made contiguous first and outputs are fresh contiguous tensors.
//   c2r destroys its input in FFTW, so it always runs on a copy.
// - Normalization is applied after the transform, on the output, with the
//   mode codes PyTorch's internal ops take: 0 none, 1 1/sqrt(n), 2 1/n, where
//   n is the product of the signal sizes over the transformed dims.
#include <fftw3.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <mutex>
#include <tuple>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

/// Where measured plans persist between processes (Note [FFTs on FFTW]): $KILN_CACHE_DIR,
/// else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln; empty (no wisdom) when KILN_FFT_WISDOM=0.
std::string wisdom_path(bool single) {
  const char* off = std::getenv("KILN_FFT_WISDOM");
  if (off != nullptr && std::string(off) == "0") return {};
  std::filesystem::path dir;
  if (const char* d = std::getenv("KILN_CACHE_DIR")) {
    dir = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME")) {
    dir = std::filesystem::path(x) / "kiln";
  } else if (const char* h = std::getenv("HOME")) {
    dir = std::filesystem::path(h) / ".cache" / "kiln";
  } else {
    return {};
  }
  return (dir / (single ? "fftw-wisdom-float" : "fftw-wisdom-double")).string();
}

/// Whether FFTW's threads library is ready (initialised once). It registers planner
/// solvers, which wisdom files are checked against: initialise it before importing.
bool fftw_threads_ready() {
  static const bool ready = fftw_init_threads() != 0 && fftwf_init_threads() != 0;
  return ready;
}

/// Reads both precisions' wisdom once (called with the planner mutex held).
void load_wisdom_once() {
  static const bool loaded = [] {
    fftw_threads_ready();
    const std::string f = wisdom_path(true), d = wisdom_path(false);
    if (!f.empty()) fftwf_import_wisdom_from_filename(f.c_str());  // a missing or bad file is ignored
    if (!d.empty()) fftw_import_wisdom_from_filename(d.c_str());
    return true;
  }();
  (void)loaded;
}

/// Writes one precision's wisdom after a new plan: to a temporary file renamed into place,
/// so a process reading it never sees half a file. Failures only lose the cache.
void save_wisdom(bool single) {
  const std::string path = wisdom_path(single);
  if (path.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  const std::string temp = path + ".tmp" + std::to_string(static_cast<long>(getpid()));
  const int ok = single ? fftwf_export_wisdom_to_filename(temp.c_str()) : fftw_export_wisdom_to_filename(temp.c_str());
  if (ok != 0) std::filesystem::rename(temp, path, error);
  if (ok == 0 || error) std::filesystem::remove(temp, error);
}

/// The transformed dims (wrapped, checked) and the batch dims of a `rank`-D tensor.
struct FftDims {
  std::vector<int64_t> signal;
  std::vector<int64_t> batch;
};

FftDims fft_dims(const char* op, int64_t rank, IntArrayRef dim) {
  FftDims d;
  std::vector<bool> used(static_cast<size_t>(rank), false);
  KILN_CHECK(!dim.empty(), op, ": expects at least one dim to transform");
  for (int64_t raw : dim) {
    const int64_t w = wrap_dim(raw, rank);
    KILN_CHECK(!used[static_cast<size_t>(w)], op, ": dims must be unique, got ", dim);
    used[static_cast<size_t>(w)] = true;
    d.signal.push_back(w);
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (!used[static_cast<size_t>(i)]) d.batch.push_back(i);
  }
  return d;
}

/// FFTW's iodims for `dims` of a tensor with the given sizes and in/out strides (in elements).
std::vector<fftw_iodim64> iodims(const std::vector<int64_t>& dims, IntArrayRef sizes, IntArrayRef in_strides,
                                 IntArrayRef out_strides) {
  std::vector<fftw_iodim64> out;
  for (int64_t d : dims) {
    out.push_back({static_cast<ptrdiff_t>(sizes[d]), static_cast<ptrdiff_t>(in_strides[d]),
                   static_cast<ptrdiff_t>(out_strides[d])});
  }
  return out;
}

/// The scale a normalization code asks for, n the product of the signal sizes.
double norm_scale(int64_t normalization, double n) {
  KILN_CHECK(normalization >= 0 && normalization <= 2, "fft: unknown normalization mode ", normalization);
  if (normalization == 0 || n == 0) return 1.0;
  return normalization == 1 ? 1.0 / std::sqrt(n) : 1.0 / n;
}

double signal_size(const std::vector<int64_t>& dims, IntArrayRef sizes) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(sizes[d]);
  return n;
}

void scale_in_place(const Tensor& t, double scale) {
  if (scale == 1.0 || t.numel() == 0) return;
  visit_dtype_and_complex(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T> || std::is_floating_point_v<T>) {
      T* p = t.data_ptr<T>();
      for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] *= static_cast<decltype(std::abs(T{}))>(scale);
    }
  });
}

/// What a plan is for: precision, kind (0 c2c, 1 r2c, 2 c2r), sign and the guru dims.
struct PlanKey {
  bool single;
  int kind;
  int sign;
  int threads;
  std::vector<ptrdiff_t> dims;  // (n, is, os) per transformed dim, then per batch dim
  size_t rank;
  int in_offset = 0, out_offset = 0;  // the arrays' addresses mod kPlanAlignment
  bool operator<(const PlanKey& o) const {
    return std::tie(single, kind, sign, threads, rank, dims, in_offset, out_offset) <
           std::tie(o.single, o.kind, o.sign, o.threads, o.rank, o.dims, o.in_offset, o.out_offset);
  }
};

/// Plans are made for the arrays' address mod this (FFTW's SIMD codelets need the
/// alignment they were planned with), so any contiguous tensor runs without a copy.
constexpr int kPlanAlignment = 64;

/// A made plan (fftw_plan or fftwf_plan), kept for the life of the process.
struct CachedPlan {
  void* plan = nullptr;
};

constexpr size_t kMaxCachedPlans = 512;
/// Transforms over at least this many elements run on kiln's thread count
/// (FFTW's threads library); smaller ones on one thread, where starting the
/// workers would cost more than they save.
constexpr ptrdiff_t kThreadedElements = ptrdiff_t{1} << 19;

int plan_threads(const std::vector<fftw_iodim64>& dims, const std::vector<fftw_iodim64>& howmany) {
  ptrdiff_t elements = 1;
  for (const auto* list : {&dims, &howmany}) {
    for (const auto& d : *list) elements *= d.n;
  }
  if (elements < kThreadedElements || in_parallel_region()) return 1;
  return fftw_threads_ready() ? get_num_threads() : 1;
}
/// Planning with FFTW_MEASURE times candidate algorithms; this bounds it per plan
/// (Note [FFTs on FFTW]).
constexpr double kPlanningSeconds = 1.0;

/// Elements the guru dims span, for the scratch buffers a measured plan is made on.
size_t span_of(const std::vector<fftw_iodim64>& dims, const std::vector<fftw_iodim64>& howmany, bool input,
               ptrdiff_t last_extra) {
  ptrdiff_t extent = 1;
  for (const auto* list : {&dims, &howmany}) {
    for (const auto& d : *list) extent += (d.n - 1) * (input ? d.is : d.os);
  }
  return static_cast<size_t>(extent + last_extra);
}

template <typename Plan, typename Make>
Plan cached_plan(const PlanKey& key, Make make) {
  static std::map<PlanKey, CachedPlan> cache;
  std::lock_guard<std::mutex> lock(planner_mutex());
  auto it = cache.find(key);
  if (it != cache.end()) return static_cast<Plan>(it->second.plan);
  if (cache.size() >= kMaxCachedPlans) cache.clear();  // plans are small; forgetting them is only slower
  load_wisdom_once();
  Plan plan = make();
  KILN_CHECK(plan != nullptr, "fft: FFTW could not plan this transform");
  save_wisdom(key.single);
  cache[key].plan = static_cast<void*>(plan);
  return plan;
}

/// Runs one transform with a cached plan: measured once (FFTW_MEASURE, at most
/// kPlanningSeconds) on scratch buffers of the same layout, then executed on these
/// arrays with FFTW's new-array execute. `in` and `out` are contiguous; the plan is made for
/// their addresses' offsets from 64-byte lines (part of its cache key).
void run_plan(bool single, int kind, int sign, const std::vector<fftw_iodim64>& dims,
              const std::vector<fftw_iodim64>& howmany, void* in, void* out) {
  const int rank = static_cast<int>(dims.size()), batch_rank = static_cast<int>(howmany.size());
  const int threads = plan_threads(dims, howmany);
  PlanKey key{single, kind, sign, threads, {}, dims.size()};
  key.in_offset = static_cast<int>(reinterpret_cast<uintptr_t>(in) % kPlanAlignment);
  key.out_offset = static_cast<int>(reinterpret_cast<uintptr_t>(out) % kPlanAlignment);
  for (const auto* list : {&dims, &howmany}) {
    for (const auto& d : *list) key.dims.insert(key.dims.end(), {d.n, d.is, d.os});
  }
  // Scratch sizes in complex elements (twice that in reals is always enough).
  const size_t in_span = span_of(dims, howmany, true, 1), out_span = span_of(dims, howmany, false, 1);
  const unsigned flags = FFTW_MEASURE | (kind == 2 ? FFTW_DESTROY_INPUT : 0u);
  if (single) {
    auto plan = cached_plan<fftwf_plan>(key, [&] {
      fftwf_set_timelimit(kPlanningSeconds);
      fftwf_plan_with_nthreads(threads);
      char* a_base = static_cast<char*>(fftwf_malloc(sizeof(fftwf_complex) * in_span + kPlanAlignment));
      char* b_base = static_cast<char*>(fftwf_malloc(sizeof(fftwf_complex) * out_span + kPlanAlignment));
      auto* a = reinterpret_cast<fftwf_complex*>(a_base + key.in_offset);  // the caller's alignment
      auto* b = reinterpret_cast<fftwf_complex*>(b_base + key.out_offset);
      auto* d = reinterpret_cast<const fftwf_iodim64*>(dims.data());
      auto* h = reinterpret_cast<const fftwf_iodim64*>(howmany.data());
      fftwf_plan p = kind == 0   ? fftwf_plan_guru64_dft(rank, d, batch_rank, h, a, b, sign, flags)
                     : kind == 1 ? fftwf_plan_guru64_dft_r2c(rank, d, batch_rank, h, reinterpret_cast<float*>(a), b,
                                                             flags)
                                 : fftwf_plan_guru64_dft_c2r(rank, d, batch_rank, h, a, reinterpret_cast<float*>(b),
                                                             flags);
      fftwf_free(a_base);
      fftwf_free(b_base);
      return p;
    });
    if (kind == 0) fftwf_execute_dft(plan, static_cast<fftwf_complex*>(in), static_cast<fftwf_complex*>(out));
    if (kind == 1) fftwf_execute_dft_r2c(plan, static_cast<float*>(in), static_cast<fftwf_complex*>(out));
    if (kind == 2) fftwf_execute_dft_c2r(plan, static_cast<fftwf_complex*>(in), static_cast<float*>(out));
    return;
  }
  auto plan = cached_plan<fftw_plan>(key, [&] {
    fftw_set_timelimit(kPlanningSeconds);
    fftw_plan_with_nthreads(threads);
    char* a_base = static_cast<char*>(fftw_malloc(sizeof(fftw_complex) * in_span + kPlanAlignment));
    char* b_base = static_cast<char*>(fftw_malloc(sizeof(fftw_complex) * out_span + kPlanAlignment));
    auto* a = reinterpret_cast<fftw_complex*>(a_base + key.in_offset);
    auto* b = reinterpret_cast<fftw_complex*>(b_base + key.out_offset);
    fftw_plan p = kind == 0   ? fftw_plan_guru64_dft(rank, dims.data(), batch_rank, howmany.data(), a, b, sign, flags)
                  : kind == 1 ? fftw_plan_guru64_dft_r2c(rank, dims.data(), batch_rank, howmany.data(),
                                                         reinterpret_cast<double*>(a), b, flags)
                              : fftw_plan_guru64_dft_c2r(rank, dims.data(), batch_rank, howmany.data(), a,
                                                         reinterpret_cast<double*>(b), flags);
    fftw_free(a_base);
    fftw_free(b_base);
    return p;
  });
  if (kind == 0) fftw_execute_dft(plan, static_cast<fftw_complex*>(in), static_cast<fftw_complex*>(out));
  if (kind == 1) fftw_execute_dft_r2c(plan, static_cast<double*>(in), static_cast<fftw_complex*>(out));
  if (kind == 2) fftw_execute_dft_c2r(plan, static_cast<fftw_complex*>(in), static_cast<double*>(out));
}

/// Batches below kThreadedElements split over kiln's threads from this many elements up.
constexpr ptrdiff_t kSplitBatchElements = ptrdiff_t{1} << 15;

/// Runs a transform like run_plan, a batch below the size FFTW's threads pay off at split
/// over kiln's threads: each runs a one-thread plan on a run of the largest batch dim. Runs
/// start at the same offset from a 64-byte line, so they share one plan (no split where
/// that cannot be).
void run_batched(bool single, int kind, int sign, const std::vector<fftw_iodim64>& dims,
                 const std::vector<fftw_iodim64>& howmany, void* in, void* out) {
  ptrdiff_t elements = 1;
  for (const auto* list : {&dims, &howmany}) {
    for (const auto& d : *list) elements *= d.n;
  }
  const int threads = get_num_threads();
  if (threads == 1 || howmany.empty() || in_parallel_region() || elements >= kThreadedElements ||
      elements < kSplitBatchElements) {
    return run_plan(single, kind, sign, dims, howmany, in, out);
  }
  size_t split = 0;
  for (size_t i = 1; i < howmany.size(); ++i) {
    if (howmany[i].n > howmany[split].n) split = i;
  }
  const ptrdiff_t real_size = single ? 4 : 8;
  const ptrdiff_t in_step = howmany[split].is * (kind == 1 ? real_size : 2 * real_size);  // bytes per index
  const ptrdiff_t out_step = howmany[split].os * (kind == 2 ? real_size : 2 * real_size);
  ptrdiff_t granule = 1;  // the fewest transforms whose inputs and outputs span whole 64-byte lines
  while (granule <= 64 && ((granule * in_step) % 64 != 0 || (granule * out_step) % 64 != 0)) ++granule;
  const ptrdiff_t n = howmany[split].n;
  const ptrdiff_t per = ((n + threads - 1) / threads + granule - 1) / granule * granule;
  if (granule > 64 || per >= n) return run_plan(single, kind, sign, dims, howmany, in, out);
  const int64_t parts = (n + per - 1) / per;
  parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      std::vector<fftw_iodim64> run = howmany;
      const ptrdiff_t start = part * per;
      run[split].n = std::min(per, n - start);
      run_plan(single, kind, sign, dims, run, static_cast<char*>(in) + start * in_step,
               static_cast<char*>(out) + start * out_step);
    }
  });
}

/// `t` contiguous: plans are cached per address alignment, so any contiguous tensor serves.
Tensor contiguous_input(const Tensor& t) { return t.contiguous(); }

}  // namespace

Tensor fft_c2c_cpu(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward) {
  KILN_CHECK(is_complex(self.dtype()), "_fft_c2c: expects a complex input tensor, but got ",
             scalar_type_name(self.dtype()));
  const FftDims d = fft_dims("_fft_c2c", self.dim(), dim);
  const Tensor in = contiguous_input(self);
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  if (out.numel() == 0 || out.impl()->is_meta()) return out;  // meta: the checks above are the meta function
  const DimVector strides = contiguous_strides(self.sizes());
  run_batched(self.dtype() == DType::Complex64, 0, forward ? FFTW_FORWARD : FFTW_BACKWARD,
              iodims(d.signal, self.sizes(), strides, strides), iodims(d.batch, self.sizes(), strides, strides),
              in.data_ptr(), out.data_ptr());
  scale_in_place(out, norm_scale(normalization, signal_size(d.signal, self.sizes())));
  return out;
}

Tensor fft_r2c_cpu(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided) {
  KILN_CHECK(self.dtype() == DType::Float32 || self.dtype() == DType::Float64,
             "_fft_r2c: expects a floating point input tensor, but got ", scalar_type_name(self.dtype()));
  if (!onesided) {
    return fft_c2c_cpu(to_dtype_copy(self, to_complex_type(self.dtype())), dim, normalization, true);
  }
  const FftDims d = fft_dims("_fft_r2c", self.dim(), dim);
  const int64_t last = d.signal.back();
  DimVector out_sizes(self.sizes());
  out_sizes[last] = self.size(last) / 2 + 1;
  Tensor out = empty(out_sizes, to_complex_type(self.dtype()), self.device());
  if (out.impl()->is_meta()) return out;  // the checks above are the meta function
  if (self.numel() == 0) {
    if (out.numel() > 0) native::fill_impl(out, Scalar(0.0));
    return out;
  }
  const Tensor in = contiguous_input(self);
  const DimVector in_strides = contiguous_strides(self.sizes()), out_strides = contiguous_strides(out_sizes);
  // FFTW's r2c dims are the real (input) sizes; the output's last dim is n/2 + 1.
  run_batched(self.dtype() == DType::Float32, 1, 0, iodims(d.signal, self.sizes(), in_strides, out_strides),
              iodims(d.batch, self.sizes(), in_strides, out_strides), in.data_ptr(), out.data_ptr());
  scale_in_place(out, norm_scale(normalization, signal_size(d.signal, self.sizes())));
  return out;
}

Tensor fft_c2r_cpu(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  KILN_CHECK(is_complex(self.dtype()), "_fft_c2r: expects a complex input tensor, but got ",
             scalar_type_name(self.dtype()));
  KILN_CHECK(last_dim_size >= 1, "Invalid number of data points (", last_dim_size, ") specified");
  const FftDims d = fft_dims("_fft_c2r", self.dim(), dim);
  const int64_t last = d.signal.back();
  KILN_CHECK(self.size(last) == last_dim_size / 2 + 1, "_fft_c2r: expected the last transformed dim to have ",
             last_dim_size / 2 + 1, " elements for last_dim_size ", last_dim_size, ", got ", self.size(last));
  DimVector out_sizes(self.sizes());
  out_sizes[last] = last_dim_size;
  Tensor out = empty(out_sizes, to_real_value_type(self.dtype()), self.device());
  if (out.numel() == 0 || out.impl()->is_meta()) return out;  // meta: the checks above are the meta function
  const Tensor in = to_dtype_copy(self, self.dtype());  // FFTW's c2r overwrites its input
  const DimVector in_strides = contiguous_strides(self.sizes()), out_strides = contiguous_strides(out_sizes);
  // FFTW's c2r dims are the real (output) sizes.
  run_batched(self.dtype() == DType::Complex64, 2, 0, iodims(d.signal, out_sizes, in_strides, out_strides),
              iodims(d.batch, out_sizes, in_strides, out_strides), in.data_ptr(), out.data_ptr());
  scale_in_place(out, norm_scale(normalization, signal_size(d.signal, out_sizes)));
  return out;
}

}  // namespace kiln::native

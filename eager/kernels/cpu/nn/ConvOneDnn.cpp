// float32 convolution on oneDNN: memory descriptors over kiln's NCHW buffers,
// primitives in the layouts oneDNN prefers, reorders in and out, and the
// thread count of the calling kiln context. See Note [Convolution on oneDNN].
#include "eager/kernels/cpu/nn/ConvOneDnn.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/creation/Factories.h"

namespace kiln::native {

// Note [Convolution on oneDNN]
// ----------------------------
// float32 convolutions (float16/bfloat16 too, widened first) run on oneDNN,
// as PyTorch's CPU convolutions do: its JIT kernels use the machine's AVX-512,
// while kiln's OpenBLAS is held to AVX2 here (OPENBLAS_CORETYPE, see "The BLAS,
// by measurement" in README.md). Which pass goes where (ConvIm2col.cpp's
// onednn_for) and the measurements are in README.md; float64 and integer
// convolutions keep the im2col path (Note [Convolution as im2col and GEMM]).
//
// Layouts: each call describes kiln's buffers as plain nchw/oihw (goihw with
// groups) memory, asks oneDNN for a primitive with format_tag::any (it picks
// nhwc or blocked layouts such as nChw16c) and reorders operands in and the
// result out where the layouts differ, into buffers from kiln's caching
// allocator (a fresh oneDNN allocation of a few MiB paid its page faults on
// every call), as is the scratchpad (scratchpad_mode::user). Right padding is
// the exact amount the output size needs (PyTorch's output size floors);
// dilation is oneDNN's d - 1. A geometry oneDNN has no implementation for
// returns false and the caller takes the im2col path.
//
// Threads: Debian's libdnnl is an OpenMP build, whose team size is the calling
// thread's omp nthreads-var, and oneDNN fixes a primitive's work split for the
// team size it sees when it builds the descriptor. kiln splits the batch into
// chunks of samples by size alone (kChunkBytes of input and output per chunk)
// and runs the chunks on its own pool (parallel_for), each oneDNN call with a
// team of one: no OpenMP team then exists next to oneTBB's workers (OpenMP
// barriers spin, and on this shared 2-core machine a descheduled team member
// stalled calls for tens of ms), and, as elsewhere in kiln, results do not
// depend on the thread count (the weight gradient sums per-chunk partials in
// chunk order). A batch of one chunk runs alone on kiln.get_num_threads()
// OpenMP threads. Primitive descriptors are cached per thread, keyed by
// direction, geometry and team size (building one walks oneDNN's
// implementation list); the primitives come from oneDNN's own cache.

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

/// The OpenMP team size of this thread's next oneDNN call (and primitive descriptor).
void set_omp_threads(int want) {
  if (omp_get_max_threads() != want) omp_set_num_threads(want);
}

/// A chunk's thread count: one inside kiln's parallel_for, else kiln's count.
void set_chunk_omp_threads() { set_omp_threads(in_parallel_region() ? 1 : get_num_threads()); }

struct Descs {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
};

Descs descs(const Conv2dGeometry& g, bool with_bias, tag layout) {
  const auto f32 = memory::data_type::f32;
  Descs d;
  d.src = memory::desc({g.batch, g.in_channels, g.height, g.width}, f32, layout);
  d.dst = memory::desc({g.batch, g.out_channels, g.out_h, g.out_w}, f32, layout);
  if (g.groups == 1) {
    d.weights = memory::desc({g.out_channels, g.in_channels, g.kernel_h, g.kernel_w}, f32,
                             layout == tag::any ? tag::any : tag::oihw);
  } else {
    d.weights = memory::desc({g.groups, g.group_out(), g.group_in(), g.kernel_h, g.kernel_w}, f32,
                             layout == tag::any ? tag::any : tag::goihw);
  }
  if (with_bias) d.bias = memory::desc({g.out_channels}, f32, tag::x);
  d.strides = {g.stride_h, g.stride_w};
  d.dilates = {g.dilation_h - 1, g.dilation_w - 1};
  d.pad_l = {g.pad_h, g.pad_w};
  const int64_t eff_h = (g.kernel_h - 1) * g.dilation_h + 1, eff_w = (g.kernel_w - 1) * g.dilation_w + 1;
  d.pad_r = {(g.out_h - 1) * g.stride_h + eff_h - g.height - g.pad_h,
             (g.out_w - 1) * g.stride_w + eff_w - g.width - g.pad_w};
  return d;
}

/// A key for one (direction, geometry) pair.
struct Key {
  int64_t v[18];
  bool operator==(const Key& o) const {
    for (int i = 0; i < 18; ++i) {
      if (v[i] != o.v[i]) return false;
    }
    return true;
  }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t x : k.v) h = (h ^ static_cast<size_t>(x)) * 1099511628211ull;
    return h;
  }
};
Key key_of(const Conv2dGeometry& g, int64_t direction) {
  // The team size too: oneDNN fixes a primitive's work split by the thread count
  // when it builds the descriptor, and runs that many threads however it is called.
  return Key{{direction, g.batch, g.in_channels, g.height, g.width, g.out_channels, g.kernel_h, g.kernel_w, g.groups,
              g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dilation_h, g.dilation_w, g.out_h, g.out_w,
              omp_get_max_threads()}};
}

/// pd_cache<PD>()[key]: primitive descriptors built once per thread and geometry.
/// An empty optional records a geometry oneDNN has no implementation for.
template <typename PD>
std::unordered_map<Key, std::optional<PD>, KeyHash>& pd_cache() {
  thread_local std::unordered_map<Key, std::optional<PD>, KeyHash> cache;
  return cache;
}

/// The cached descriptor, or nullptr when oneDNN cannot build one for g.
template <typename PD, typename Make>
const PD* cached_pd(const Conv2dGeometry& g, int64_t direction, Make&& make) {
  auto& cache = pd_cache<PD>();
  const Key key = key_of(g, direction);
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() > 256) cache.clear();  // a bound on the memory of many shapes
    std::optional<PD> pd;
    try {
      pd.emplace(make());
    } catch (const dnnl::error&) {
      pd.reset();
    }
    it = cache.emplace(key, std::move(pd)).first;
  }
  return it->second ? &*it->second : nullptr;
}

/// Memory of layout `d` in a buffer from kiln's caching allocator: a fresh
/// oneDNN allocation of a few MiB costs its page faults on every call.
struct Scratch {
  Tensor buffer;
  memory mem;
  explicit Scratch(const memory::desc& d)
      : buffer(empty({static_cast<int64_t>((d.get_size() + sizeof(float) - 1) / sizeof(float))}, DType::Float32)),
        mem(d, cpu_engine(), buffer.data_ptr()) {}
};

}  // namespace

namespace {

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// The forward primitive descriptor (also the hint of both backward ones).
dnnl::convolution_forward::primitive_desc forward_pd(const Conv2dGeometry& g, bool with_bias, dnnl::prop_kind prop) {
  const Descs a = descs(g, with_bias, tag::any);
  const auto desc = with_bias ? dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, a.src,
                                                                a.weights, a.bias, a.dst, a.strides, a.dilates,
                                                                a.pad_l, a.pad_r)
                              : dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, a.src,
                                                                a.weights, a.dst, a.strides, a.dilates, a.pad_l,
                                                                a.pad_r);
  return {desc, user_scratchpad(), cpu_engine()};
}

using ForwardPD = dnnl::convolution_forward::primitive_desc;
using BackwardDataPD = dnnl::convolution_backward_data::primitive_desc;
using BackwardWeightsPD = dnnl::convolution_backward_weights::primitive_desc;

const ForwardPD* forward_for(const Conv2dGeometry& g, bool with_bias) {
  return cached_pd<ForwardPD>(g, with_bias ? 1 : 0,
                              [&] { return forward_pd(g, with_bias, dnnl::prop_kind::forward_inference); });
}

const BackwardDataPD* backward_data_for(const Conv2dGeometry& g) {
  return cached_pd<BackwardDataPD>(g, 2, [&] {
    const Descs a = descs(g, false, tag::any);
    const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, a.src, a.weights, a.dst,
                                                     a.strides, a.dilates, a.pad_l, a.pad_r);
    return BackwardDataPD(desc, user_scratchpad(), cpu_engine(),
                          forward_pd(g, false, dnnl::prop_kind::forward_training));
  });
}

const BackwardWeightsPD* backward_weights_for(const Conv2dGeometry& g) {
  return cached_pd<BackwardWeightsPD>(g, 3, [&] {
    const Descs a = descs(g, false, tag::any);
    const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, a.src, a.weights,
                                                        a.dst, a.strides, a.dilates, a.pad_l, a.pad_r);
    return BackwardWeightsPD(desc, user_scratchpad(), cpu_engine(),
                             forward_pd(g, false, dnnl::prop_kind::forward_training));
  });
}

/// Samples per chunk: as many as keep a chunk's input and output within
/// kChunkBytes (at least one). Chosen by size alone, so the chunks, and with
/// them the results, do not depend on the thread count.
constexpr int64_t kChunkBytes = int64_t{512} << 10;

int64_t chunk_samples(const Conv2dGeometry& g) {
  const int64_t per_sample =
      std::max<int64_t>(1, (g.in_channels * g.in_plane() + g.out_channels * g.out_plane()) * 4);
  return std::clamp<int64_t>(kChunkBytes / per_sample, 1, std::max<int64_t>(g.batch, 1));
}

/// g for the `count` samples of one chunk.
Conv2dGeometry chunk_geometry(Conv2dGeometry g, int64_t count) {
  g.batch = count;
  return g;
}

/// Whether oneDNN can build every chunk's primitive (a full chunk and the last one).
template <typename Find>
bool chunks_supported(const Conv2dGeometry& g, Find&& find) {
  const int64_t per = chunk_samples(g), last = g.batch % per;
  // The descriptors for the team size the chunks will run with (for_chunks).
  const bool one_each = in_parallel_region() || (g.batch > per && get_num_threads() > 1);
  set_omp_threads(one_each ? 1 : get_num_threads());
  return find(chunk_geometry(g, per)) != nullptr && (last == 0 || find(chunk_geometry(g, last)) != nullptr);
}

/// fn(index, first, count) for every chunk, the chunks in parallel on kiln's
/// pool (each oneDNN call then on one thread); one chunk runs alone, on
/// kiln.get_num_threads() OpenMP threads.
template <typename Fn>
void for_chunks(const Conv2dGeometry& g, Fn&& fn) {
  const int64_t per = chunk_samples(g), chunks = (g.batch + per - 1) / per;
  parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) fn(c, c * per, std::min(per, g.batch - c * per));
  });
}

/// A float32 view of `count` samples of an NCHW buffer from sample `first`.
const float* sample_ptr(const Tensor& t, int64_t first, int64_t per_sample) {
  return t.data_ptr<float>() + first * per_sample;
}

memory raw_memory(const memory::desc& d, const float* p) { return memory(d, cpu_engine(), const_cast<float*>(p)); }

/// An operand in the primitive's layout `want`: the buffer itself when the
/// layouts agree, else a reordered copy in kiln's allocator.
struct Input {
  std::optional<Scratch> copy;
  memory mem;
  Input(const memory::desc& user_desc, const float* p, const memory::desc& want, dnnl::stream& s)
      : mem(raw_memory(user_desc, p)) {
    if (mem.get_desc() == want) return;
    copy.emplace(want);
    dnnl::reorder(mem, copy->mem).execute(s, mem, copy->mem);
    mem = copy->mem;
  }
};

/// The result in the primitive's layout `want`; finish() reorders it into the
/// buffer when the layouts differ.
struct Output {
  memory user;
  std::optional<Scratch> copy;
  memory mem;
  Output(const memory::desc& user_desc, float* p, const memory::desc& want) : user(raw_memory(user_desc, p)), mem(user) {
    if (user.get_desc() == want) return;
    copy.emplace(want);
    mem = copy->mem;
  }
  void finish(dnnl::stream& s) {
    if (copy) dnnl::reorder(mem, user).execute(s, mem, user);
  }
};

/// Executes `prim` with `args` and a scratchpad from kiln's allocator.
template <typename PD, typename Prim>
void execute(const PD& pd, const Prim& prim, std::unordered_map<int, memory> args, dnnl::stream& s) {
  std::optional<Scratch> scratch;
  if (pd.scratchpad_desc().get_size() > 0) {
    scratch.emplace(pd.scratchpad_desc());
    args.emplace(DNNL_ARG_SCRATCHPAD, scratch->mem);
  }
  prim.execute(s, args);
  s.wait();
}

}  // namespace

bool onednn_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                           const Conv2dGeometry& g) {
  const bool with_bias = bias.defined();
  if (!chunks_supported(g, [&](const Conv2dGeometry& c) { return forward_for(c, with_bias); })) return false;
  const int64_t in_sample = g.in_channels * g.in_plane(), out_sample = g.out_channels * g.out_plane();
  for_chunks(g, [&](int64_t, int64_t first, int64_t count) {
    set_chunk_omp_threads();
    const Conv2dGeometry c = chunk_geometry(g, count);
    const ForwardPD& pd = *forward_for(c, with_bias);
    const Descs u = descs(c, with_bias, tag::nchw);
    dnnl::stream& s = cpu_stream();
    const Input src(u.src, sample_ptr(x, first, in_sample), pd.src_desc(), s);
    const Input weights(u.weights, w.data_ptr<float>(), pd.weights_desc(), s);
    Output dst(u.dst, y.data_ptr<float>() + first * out_sample, pd.dst_desc());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src.mem}, {DNNL_ARG_WEIGHTS, weights.mem}, {DNNL_ARG_DST, dst.mem}};
    if (with_bias) args.emplace(DNNL_ARG_BIAS, raw_memory(u.bias, bias.data_ptr<float>()));
    execute(pd, dnnl::convolution_forward(pd), std::move(args), s);
    dst.finish(s);
    s.wait();
  });
  return true;
}

bool onednn_conv2d_backward_input(const Tensor& gy, const Tensor& w, const Tensor& gx, const Conv2dGeometry& g) {
  if (!chunks_supported(g, [&](const Conv2dGeometry& c) { return backward_data_for(c); })) return false;
  const int64_t in_sample = g.in_channels * g.in_plane(), out_sample = g.out_channels * g.out_plane();
  for_chunks(g, [&](int64_t, int64_t first, int64_t count) {
    set_chunk_omp_threads();
    const Conv2dGeometry c = chunk_geometry(g, count);
    const BackwardDataPD& pd = *backward_data_for(c);
    const Descs u = descs(c, false, tag::nchw);
    dnnl::stream& s = cpu_stream();
    const Input diff_dst(u.dst, sample_ptr(gy, first, out_sample), pd.diff_dst_desc(), s);
    const Input weights(u.weights, w.data_ptr<float>(), pd.weights_desc(), s);
    Output diff_src(u.src, gx.data_ptr<float>() + first * in_sample, pd.diff_src_desc());
    execute(pd, dnnl::convolution_backward_data(pd),
            {{DNNL_ARG_DIFF_DST, diff_dst.mem}, {DNNL_ARG_WEIGHTS, weights.mem}, {DNNL_ARG_DIFF_SRC, diff_src.mem}},
            s);
    diff_src.finish(s);
    s.wait();
  });
  return true;
}

bool onednn_conv2d_backward_weight(const Tensor& gy, const Tensor& x, const Tensor& gw, const Conv2dGeometry& g) {
  if (!chunks_supported(g, [&](const Conv2dGeometry& c) { return backward_weights_for(c); })) return false;
  const int64_t in_sample = g.in_channels * g.in_plane(), out_sample = g.out_channels * g.out_plane();
  const int64_t per = chunk_samples(g), chunks = (g.batch + per - 1) / per, size = gw.numel();
  // Each chunk's gradient goes to its own row of `partial`; the rows are summed in chunk order.
  const Tensor partial = chunks == 1 ? gw : empty({chunks, size}, DType::Float32);
  for_chunks(g, [&](int64_t index, int64_t first, int64_t count) {
    set_chunk_omp_threads();
    const Conv2dGeometry c = chunk_geometry(g, count);
    const BackwardWeightsPD& pd = *backward_weights_for(c);
    const Descs u = descs(c, false, tag::nchw);
    dnnl::stream& s = cpu_stream();
    const Input src(u.src, sample_ptr(x, first, in_sample), pd.src_desc(), s);
    const Input diff_dst(u.dst, sample_ptr(gy, first, out_sample), pd.diff_dst_desc(), s);
    Output diff_weights(u.weights, partial.data_ptr<float>() + index * size, pd.diff_weights_desc());
    execute(pd, dnnl::convolution_backward_weights(pd),
            {{DNNL_ARG_SRC, src.mem}, {DNNL_ARG_DIFF_DST, diff_dst.mem}, {DNNL_ARG_DIFF_WEIGHTS, diff_weights.mem}},
            s);
    diff_weights.finish(s);
    s.wait();
  });
  if (chunks > 1) {
    const float* part = partial.data_ptr<float>();
    float* out = gw.data_ptr<float>();
    parallel_for(0, size, kGrainSize / std::max<int64_t>(chunks, 1), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        float acc = part[i];
        for (int64_t c = 1; c < chunks; ++c) acc += part[c * size + i];
        out[i] = acc;
      }
    });
  }
  return true;
}

}  // namespace kiln::native

// The CUDA C++ templates of the random kernels (RandomKernelSources.h).
#include "eager/kernels/cuda/RandomKernelSources.h"

#include "eager/core/Error.h"

namespace kiln::native::cuda_kernels {

namespace {

// Philox4x32-10 as eager/kernels/random/Philox.h's philox_block: counter (block, 0), key seed.
const char* kPhilox = R"CUDA(
#ifndef KILN_PHILOX
#define KILN_PHILOX
namespace kiln {
__device__ inline uint4 philox_block(unsigned long long seed, unsigned long long block) {
  unsigned c0 = static_cast<unsigned>(block);
  unsigned c1 = static_cast<unsigned>(block >> 32);
  unsigned c2 = 0u;
  unsigned c3 = 0u;
  unsigned k0 = static_cast<unsigned>(seed);
  unsigned k1 = static_cast<unsigned>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = 0xD2511F53ull * c0;
    const unsigned long long p1 = 0xCD9E8D57ull * c2;
    const unsigned n0 = static_cast<unsigned>(p1 >> 32) ^ c1 ^ k0;
    const unsigned n1 = static_cast<unsigned>(p1);
    const unsigned n2 = static_cast<unsigned>(p0 >> 32) ^ c3 ^ k1;
    const unsigned n3 = static_cast<unsigned>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
  }
  return make_uint4(c0, c1, c2, c3);
}
}  // namespace kiln
#endif
)CUDA";

// A thread per Philox block j = 16 g + r (group g, lane r): its word w is element 64 g + 16 w + r.
const char* kBernoulli = R"CUDA(
extern "C" __global__ void $NAME($T* out, long long n, unsigned long long seed, unsigned long long offset,
                                 unsigned threshold, int always) {
  const long long blocks = (n + 63) / 64 * 16;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < blocks; j += (long long)gridDim.x * blockDim.x) {
    const uint4 b = kiln::philox_block(seed, offset + static_cast<unsigned long long>(j));
    const unsigned words[4] = {b.x, b.y, b.z, b.w};
    const long long first = (j / 16) * 64 + (j % 16);
    for (int w = 0; w < 4; ++w) {
      const long long e = first + 16 * w;
      if (e < n) out[e] = kiln::convert<$T>(always != 0 || words[w] < threshold);
    }
  }
}
)CUDA";

// float, float16, bfloat16: one word per element, its top DIGITS bits; computed in float.
const char* kUniformFloat = R"CUDA(
extern "C" __global__ void $NAME($T* out, long long n, unsigned long long seed, unsigned long long offset,
                                 float from, float range) {
  const long long blocks = (n + 63) / 64 * 16;
  const float scale = 1.0f / static_cast<float>(1u << $DIGITS);
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < blocks; j += (long long)gridDim.x * blockDim.x) {
    const uint4 b = kiln::philox_block(seed, offset + static_cast<unsigned long long>(j));
    const unsigned words[4] = {b.x, b.y, b.z, b.w};
    const long long first = (j / 16) * 64 + (j % 16);
    for (int w = 0; w < 4; ++w) {
      const long long e = first + 16 * w;
      const float u = static_cast<float>(static_cast<int>(words[w] >> (32 - $DIGITS))) * scale;
      if (e < n) out[e] = kiln::convert<$T>(u * range + from);
    }
  }
}
)CUDA";

// double: two words per element, 32 elements per group; block j = 16 g + r holds words 2v
// (low) and 2v + 1 (high) of element 32 g + 16 v + r (Note [Random groups]).
const char* kUniformDouble = R"CUDA(
extern "C" __global__ void $NAME(double* out, long long n, unsigned long long seed, unsigned long long offset,
                                 double from, double range) {
  const long long blocks = (n + 31) / 32 * 16;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < blocks; j += (long long)gridDim.x * blockDim.x) {
    const uint4 b = kiln::philox_block(seed, offset + static_cast<unsigned long long>(j));
    const long long first = (j / 16) * 32 + (j % 16);
    const double u0 = static_cast<double>(b.y) * 0x1.0p-32 + static_cast<double>(b.x >> 11) * 0x1.0p-53;
    const double u1 = static_cast<double>(b.w) * 0x1.0p-32 + static_cast<double>(b.z >> 11) * 0x1.0p-53;
    if (first < n) out[first] = u0 * range + from;
    if (first + 16 < n) out[first + 16] = u1 * range + from;
  }
}
)CUDA";

// Standard normals by Box-Muller as the CPU's box_muller: in a float group, elements e and e + 32
// pair up (words w and w + 2 of one block), z_e = r cos(theta), z_{e+32} = r sin(theta),
// r = sqrt(-2 log(1 - u_e)), theta = 2 pi u_{e+32}; then mean + std * z.
const char* kNormalFloat = R"CUDA(
extern "C" __global__ void $NAME($T* out, long long n, unsigned long long seed, unsigned long long offset,
                                 float mean, float std) {
  const long long blocks = (n + 63) / 64 * 16;
  const float scale = 1.0f / 16777216.0f;
  const float two_pi = 6.2831853071795864769f;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < blocks; j += (long long)gridDim.x * blockDim.x) {
    const uint4 b = kiln::philox_block(seed, offset + static_cast<unsigned long long>(j));
    const unsigned words[4] = {b.x, b.y, b.z, b.w};
    const long long first = (j / 16) * 64 + (j % 16);
    for (int w = 0; w < 2; ++w) {
      const float u1 = 1.0f - static_cast<float>(static_cast<int>(words[w] >> 8)) * scale;
      const float theta = two_pi * (static_cast<float>(static_cast<int>(words[w + 2] >> 8)) * scale);
      const float radius = sqrtf(-2.0f * logf(u1));
      const long long e = first + 16 * w;
      if (e < n) out[e] = kiln::convert<$T>(radius * cosf(theta) * std + mean);
      if (e + 32 < n) out[e + 32] = kiln::convert<$T>(radius * sinf(theta) * std + mean);
    }
  }
}
)CUDA";

// double: block j = 16 g + r holds the uniforms of elements 32 g + r (words 0, 1) and 32 g + 16 + r
// (words 2, 3), the pair Box-Muller takes together.
const char* kNormalDouble = R"CUDA(
extern "C" __global__ void $NAME(double* out, long long n, unsigned long long seed, unsigned long long offset,
                                 double mean, double std) {
  const long long blocks = (n + 31) / 32 * 16;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < blocks; j += (long long)gridDim.x * blockDim.x) {
    const uint4 b = kiln::philox_block(seed, offset + static_cast<unsigned long long>(j));
    const long long first = (j / 16) * 32 + (j % 16);
    const double u0 = static_cast<double>(b.y) * 0x1.0p-32 + static_cast<double>(b.x >> 11) * 0x1.0p-53;
    const double u1 = static_cast<double>(b.w) * 0x1.0p-32 + static_cast<double>(b.z >> 11) * 0x1.0p-53;
    const double radius = sqrt(-2.0 * log(1.0 - u0));
    const double theta = 6.283185307179586476925 * u1;
    if (first < n) out[first] = radius * cos(theta) * std + mean;
    if (first + 16 < n) out[first + 16] = radius * sin(theta) * std + mean;
  }
}
)CUDA";

int uniform_digits(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 24;
    case DType::Float16: return 11;
    case DType::BFloat16: return 8;
    default: break;
  }
  KILN_FAIL(NotImplemented, "no CUDA uniform template for ", scalar_type_name(dtype));
}

}  // namespace

KernelInstance bernoulli_kernel(DType dtype) {
  const std::string name = std::string("kiln_bernoulli_") + template_tag(dtype);
  return {name, std::string(kPhilox) + fill_template(kBernoulli, {{"NAME", name}, {"T", template_cuda_type(dtype)}})};
}

KernelInstance uniform_kernel(DType dtype) {
  const std::string name = std::string("kiln_uniform_") + template_tag(dtype);
  if (dtype == DType::Float64) return {name, std::string(kPhilox) + fill_template(kUniformDouble, {{"NAME", name}})};
  return {name, std::string(kPhilox) + fill_template(kUniformFloat, {{"NAME", name},
                                                                     {"T", template_cuda_type(dtype)},
                                                                     {"DIGITS", std::to_string(uniform_digits(dtype))}})};
}

KernelInstance normal_kernel(DType dtype) {
  KILN_CHECK(category(dtype) == DTypeCategory::Floating, "no CUDA normal template for ", scalar_type_name(dtype));
  const std::string name = std::string("kiln_normal_") + template_tag(dtype);
  if (dtype == DType::Float64) return {name, std::string(kPhilox) + fill_template(kNormalDouble, {{"NAME", name}})};
  return {name, std::string(kPhilox) + fill_template(kNormalFloat, {{"NAME", name}, {"T", template_cuda_type(dtype)}})};
}

void append_random_kernel_instances(std::vector<std::pair<std::string, std::vector<KernelInstance>>>& families) {
  std::vector<KernelInstance> random;
  for (DType d : cuda_kernel_dtypes()) {
    random.push_back(bernoulli_kernel(d));
    if (category(d) != DTypeCategory::Floating) continue;
    random.push_back(uniform_kernel(d));
    random.push_back(normal_kernel(d));
  }
  families.emplace_back("random", std::move(random));
}

}  // namespace kiln::native::cuda_kernels

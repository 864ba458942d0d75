#include "exec/tensor_util.h"

#include <algorithm>
#include <random>

namespace devplace::exec {

namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// [0, 1) from the top 53 bits of a 64-bit draw (std::uniform_real_distribution is not portable bit for bit).
double UnitReal(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace

uint64_t MixSeed(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return SplitMix64(seed ^ SplitMix64(h));
}

at::Tensor SeededTensor(const std::vector<int64_t>& shape, at::ScalarType type, const at::Device& device, uint64_t seed,
                        double scale, int64_t int_bound) {
  std::mt19937_64 rng(seed);
  at::Tensor cpu;
  if (at::isFloatingType(type)) {
    cpu = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
    float* p = cpu.data_ptr<float>();
    const int64_t n = cpu.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>((2.0 * UnitReal(rng()) - 1.0) * scale);
  } else {
    cpu = at::empty(shape, at::TensorOptions().dtype(at::kLong));
    int64_t* p = cpu.data_ptr<int64_t>();
    const int64_t n = cpu.numel();
    const uint64_t bound = static_cast<uint64_t>(type == at::kBool ? 2 : std::max<int64_t>(1, int_bound));
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(rng() % bound);
  }
  return cpu.to(at::TensorOptions().dtype(type).device(device));
}

at::Tensor FitTo(const at::Tensor& t, at::IntArrayRef shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (t.numel() == n) return t.reshape(shape);
  at::Tensor flat = t.reshape({-1});
  if (flat.numel() > n) return flat.narrow(0, 0, n).reshape(shape);
  return at::constant_pad_nd(flat, {0, n - flat.numel()}).reshape(shape);
}

at::Tensor CopyTo(const at::Tensor& t, const at::Device& device) {
  at::Tensor out = at::empty(t.sizes(), t.options().device(device));
  out.copy_(t);
  return out;
}

at::Tensor FlatConcat(const std::vector<at::Tensor>& parts) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& p : parts)
    if (p.defined()) flat.push_back(p.reshape({-1}));
  if (flat.size() == 1) return flat[0].contiguous();
  return at::cat(flat, 0);
}

at::Tensor NarrowBox(const at::Tensor& t, const std::vector<int64_t>& lo, const std::vector<int64_t>& size) {
  at::Tensor v = t;
  for (size_t a = 0; a < lo.size(); ++a)
    if (lo[a] != 0 || size[a] != t.size(static_cast<int64_t>(a))) v = v.narrow(static_cast<int64_t>(a), lo[a], size[a]);
  return v;
}

int64_t Rows(at::IntArrayRef shape) {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
  return n;
}

}  // namespace devplace::exec

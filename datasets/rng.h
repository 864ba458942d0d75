// A small seeded random source for the graph generators. Each generator owns one; there is no global RNG.
// Every draw is computed from std::mt19937_64's raw 64-bit outputs with our own integer->range and
// integer->real conversions, so a (family, seed) pair gives the same graph on every platform
// (std::uniform_*_distribution are implementation-defined).
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "core/check.h"

namespace devplace {

class Rng {
 public:
  // Seeds from `seed` mixed with `salt` (e.g. the family name), so families with equal seeds differ.
  Rng(uint64_t seed, std::string_view salt) : engine_(Mix(seed, salt)) {}

  // Uniform integer in [lo, hi] (inclusive). Precondition: lo <= hi.
  int64_t Int(int64_t lo, int64_t hi) {
    DEVPLACE_CHECK(lo <= hi, "Rng::Int: empty range");
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    if (span == 0) return static_cast<int64_t>(engine_());  // the full 64-bit range
    // Rejection sampling removes the modulo bias.
    const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return lo + static_cast<int64_t>(x % span);
  }

  // Uniform real in [0, 1) with 53 random bits.
  double Real() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // True with probability p.
  bool Bernoulli(double p) { return Real() < p; }

  // A uniformly chosen element. Precondition: !items.empty().
  template <class T>
  const T& Pick(const std::vector<T>& items) {
    DEVPLACE_CHECK(!items.empty(), "Rng::Pick: no items");
    return items[static_cast<size_t>(Int(0, static_cast<int64_t>(items.size()) - 1))];
  }

 private:
  // SplitMix64 finaliser over the seed and an FNV-1a hash of the salt.
  static uint64_t Mix(uint64_t seed, std::string_view salt) {
    uint64_t h = 1469598103934665603ull;
    for (char c : salt) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (h | 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  std::mt19937_64 engine_;
};

}  // namespace devplace

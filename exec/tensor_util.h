// Internal to exec/: deterministic tensor contents and small tensor helpers shared by the kernels.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace devplace::exec {

// A 64-bit seed from a base seed and a name (FNV-1a of the name mixed with SplitMix64), stable across platforms,
// so that an op's inputs and weights depend on the op, not on where it runs.
uint64_t MixSeed(uint64_t seed, std::string_view name);

// A tensor of `shape` and `type` on `device` with deterministic contents from `seed`: floating types uniform in
// [-scale, scale), integer types uniform in [0, int_bound) (int_bound >= 1), booleans fair coin flips.
at::Tensor SeededTensor(const std::vector<int64_t>& shape, at::ScalarType type, const at::Device& device, uint64_t seed,
                        double scale, int64_t int_bound);

// `t` reshaped to `shape` when the element counts agree; otherwise the leading elements of `t`, zero-padded to
// the element count of `shape` (a tensor that arrived on an edge carrying part of its producer's output).
at::Tensor FitTo(const at::Tensor& t, at::IntArrayRef shape);

// A copy of `t` in fresh memory of `device` (on the CPU: a buffer the calling worker allocates and fills).
at::Tensor CopyTo(const at::Tensor& t, const at::Device& device);

// The flattened concatenation of `parts` (skipping undefined ones): a weight gradient as one flat buffer.
at::Tensor FlatConcat(const std::vector<at::Tensor>& parts);

// The view of `t` over the box that starts at `lo` and spans `size` (one entry per axis of `t`).
at::Tensor NarrowBox(const at::Tensor& t, const std::vector<int64_t>& lo, const std::vector<int64_t>& size);

// Row count of a tensor seen as a matrix over its last axis: numel / last extent.
int64_t Rows(at::IntArrayRef shape);

}  // namespace devplace::exec

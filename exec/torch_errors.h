// One-line, user-facing descriptions of LibTorch failures inside the executor and the profiler.
// Internal to devplace_exec.
#pragma once

#include <exception>
#include <string>

namespace devplace::exec {

// The first line of a LibTorch error, or, when it is an allocation failure (std::bad_alloc, "not enough
// memory", "can't allocate memory", "out of memory"), "out of memory on <device>: cannot allocate <size>" with the size when LibTorch
// gives it, so that users never see allocator source locations.
std::string DescribeTorchFailure(const std::exception& e, const std::string& device);

}  // namespace devplace::exec

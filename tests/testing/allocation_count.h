// Counting allocations, for tests and benchmarks that check a path does not allocate. Linking a binary against
// devplace_allocation_count (and calling ThreadAllocations) replaces the global operator new and delete of that
// binary with malloc/free that count each operator new call of the calling thread.
#pragma once

#include <cstdint>

namespace devplace::testing {

// operator new calls made by the calling thread so far (take differences around the code in question).
int64_t ThreadAllocations();

}  // namespace devplace::testing

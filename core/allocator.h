// Process-wide allocator settings for programs that allocate and free large blocks over and over.
#pragma once

namespace devplace {

// Makes the C allocator keep freed memory for reuse: blocks up to 32 MiB come from the heap instead of fresh
// mappings, the heap grows in steps of 256 MiB and freed memory at its top is not returned to the system. A
// program that builds and drops big simulations and LibTorch tensors then stops faulting the same pages in again
// (a tenth of a 50k-op placement's time on a 2-core AMD EPYC: docs/performance.md); it keeps its peak memory
// until it exits. Call once at the start of main, before other threads exist. glibc only: elsewhere it does
// nothing. Returns whether the settings were taken.
bool KeepFreedMemoryForReuse();

}  // namespace devplace

#include "core/allocator.h"

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace devplace {

bool KeepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  constexpr int kMmapThreshold = 32 << 20;  // glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
  constexpr int kTopPad = 256 << 20;
  constexpr int kNeverTrim = -1;  // (size_t)-1: no trimming
  return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TOP_PAD, kTopPad) == 1 &&
         mallopt(M_TRIM_THRESHOLD, kNeverTrim) == 1;
#else
  return false;
#endif
}

}  // namespace devplace

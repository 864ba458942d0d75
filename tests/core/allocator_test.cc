#include "core/allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>  // defines __GLIBC__ on glibc
#include <cstring>
#include <vector>

namespace devplace {
namespace {

// glibc takes every setting (a value it refuses, e.g. a mapping threshold above its maximum, returns false); the
// allocator then still serves and reuses large blocks. Under a sanitizer its own allocator replaces glibc's.
TEST(Allocator, KeepsFreedMemoryForReuse) {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  EXPECT_TRUE(KeepFreedMemoryForReuse());
#else
  KeepFreedMemoryForReuse();
#endif
  for (int round = 0; round < 3; ++round) {
    std::vector<char*> blocks;
    for (size_t bytes : {size_t{1} << 10, size_t{8} << 20, size_t{40} << 20}) {
      char* block = static_cast<char*>(std::malloc(bytes));
      ASSERT_NE(block, nullptr);
      std::memset(block, round, bytes);
      EXPECT_EQ(block[bytes - 1], static_cast<char>(round));
      blocks.push_back(block);
    }
    for (char* block : blocks) std::free(block);
  }
}

}  // namespace
}  // namespace devplace

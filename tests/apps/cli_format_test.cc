// The amounts and messages the commands print stay short for any value (core/format.h, apps/cli_util.h).
#include <cmath>
#include <cstdio>
#include <string>
#include <limits>

#include <gtest/gtest.h>

#include "apps/cli_util.h"
#include "core/format.h"

namespace devplace::cli {
namespace {

using devplace::FormatBytes;
using devplace::FormatCount;
using devplace::FormatSeconds;

TEST(CliFormat, OrdinaryAmountsUseUnits) {
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(8.21e9), "8.21 G");
  EXPECT_EQ(FormatBytes(1.5 * 1024 * 1024 * 1024), "1.50 GiB");
  EXPECT_EQ(FormatSeconds(0.0123), "12.300 ms");
}

TEST(CliFormat, HugeAndNonFiniteAmountsStayShort) {
  EXPECT_EQ(FormatCount(1e308), "1.000e+308");
  EXPECT_EQ(FormatCount(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(FormatBytes(1e300), "1.000e+300 B");
  EXPECT_EQ(FormatSeconds(1e200), "1.000e+200 s");
  EXPECT_EQ(FormatCount(1e17), "100.00 P");  // the largest unit still applies below 1e18
}

TEST(CliFormat, ShortensLongNumbersInMessages) {
  char largest[400];  // what CLI11's range check prints for its upper bound
  std::snprintf(largest, sizeof largest, "%f", std::numeric_limits<double>::max());
  ASSERT_GT(std::string(largest).size(), 300u);
  EXPECT_EQ(ShortenNumbers("--target-ops: Value -3 not in range 0.000000 to " + std::string(largest)),
            "--target-ops: Value -3 not in range 0.000000 to 1.79769e+308");
  EXPECT_EQ(ShortenNumbers("op 3 of 12, 1.5 GiB"), "op 3 of 12, 1.5 GiB");
}

}  // namespace
}  // namespace devplace::cli

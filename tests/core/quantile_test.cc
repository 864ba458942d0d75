// core/quantile.h against values worked out by hand.
#include "core/quantile.h"

#include <gtest/gtest.h>

namespace devplace {
namespace {

TEST(Quantile, NearestRankOnTenValues) {
  // Sorted: 1 2 3 4 5 6 7 8 9 10; rank ceil(q x 10).
  const std::vector<double> v = {7, 3, 10, 1, 9, 2, 8, 4, 6, 5};
  EXPECT_EQ(NearestRankQuantile(v, 0.0), 1.0);   // rank clamped up to 1
  EXPECT_EQ(NearestRankQuantile(v, 0.05), 1.0);  // ceil(0.5) = 1
  EXPECT_EQ(NearestRankQuantile(v, 0.11), 2.0);  // ceil(1.1) = 2
  EXPECT_EQ(NearestRankQuantile(v, 0.5), 5.0);   // ceil(5) = 5: the lower middle
  EXPECT_EQ(NearestRankQuantile(v, 0.9), 9.0);
  EXPECT_EQ(NearestRankQuantile(v, 0.91), 10.0);  // ceil(9.1) = 10
  EXPECT_EQ(NearestRankQuantile(v, 1.0), 10.0);
}

TEST(Quantile, NearestRankOnFewValues) {
  EXPECT_EQ(NearestRankQuantile({}, 0.5), 0.0);
  EXPECT_EQ(NearestRankQuantile({4.5}, 0.0), 4.5);
  EXPECT_EQ(NearestRankQuantile({4.5}, 0.9), 4.5);
  // Sorted 0.25 0.5 2 (with a repeat of 0.5): ranks ceil(0.5 x 4) = 2 and ceil(0.9 x 4) = 4.
  EXPECT_EQ(NearestRankQuantile({2, 0.5, 0.25, 0.5}, 0.5), 0.5);
  EXPECT_EQ(NearestRankQuantile({2, 0.5, 0.25, 0.5}, 0.9), 2.0);
  EXPECT_EQ(NearestRankQuantile({2, 0.5, 0.25, 0.5}, 0.26), 0.5);  // ceil(1.04) = 2
}

TEST(Quantile, MedianOddEvenAndEmpty) {
  EXPECT_EQ(Median({}), 0.0);
  EXPECT_EQ(Median({3}), 3.0);
  EXPECT_EQ(Median({5, 1, 3}), 3.0);
  EXPECT_EQ(Median({5, 1, 4, 2}), 3.0);           // (2 + 4) / 2
  EXPECT_EQ(Median({10, -1, 7, 7, 0, 100}), 7.0);  // sorted -1 0 7 7 10 100: (7 + 7) / 2
  EXPECT_EQ(Median({9, 8, 1, 2, 7, 3}), 5.0);      // sorted 1 2 3 7 8 9: (3 + 7) / 2
  EXPECT_EQ(Median({0.25, 0.5}), 0.375);
}

}  // namespace
}  // namespace devplace

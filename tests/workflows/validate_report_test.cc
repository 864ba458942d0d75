// The statistics `devplace validate` reports.
#include <gtest/gtest.h>

#include <cmath>

#include "workflows/validate_report.h"

namespace devplace {
namespace {

TEST(ValidateReport, KendallTauB) {
  EXPECT_DOUBLE_EQ(KendallTauB({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(KendallTauB({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Pairs: (1,2)+ (1,3)+ (1,4)+ (2,3)- (2,4)+ (3,4)+ -> (5 - 1) / 6.
  EXPECT_NEAR(KendallTauB({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6.0, 1e-12);
  // A tie in one sequence: tau-b divides by sqrt((n0 - n1)(n0 - n2)).
  EXPECT_NEAR(KendallTauB({1, 1, 2}, {1, 2, 3}), 2.0 / std::sqrt(2.0 * 3.0), 1e-12);
  EXPECT_DOUBLE_EQ(KendallTauB({1}, {1}), 0.0);
}

TEST(ValidateReport, ErrorStatistics) {
  std::vector<ValidateRow> rows(3);
  rows[0] = {"a", "s0", true, "", 1.0, 1.0, 1.0, 1.1};
  rows[1] = {"a", "s1", true, "", 2.0, 2.0, 2.0, 1.6};
  rows[2] = {"b", "s0", false, "failed"};
  const ValidateStats all = ComputeValidateStats(rows);
  EXPECT_EQ(all.rows, 2);
  EXPECT_NEAR(all.mape, (0.1 + 0.2) / 2, 1e-12);
  EXPECT_NEAR(all.max_error, 0.2, 1e-12);
  EXPECT_NEAR(all.mean_error, (0.1 - 0.2) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(all.kendall_tau, 1.0);
  EXPECT_EQ(ComputeValidateStats(rows, "b").rows, 0);
  rows[1].kind = "split x2p";  // per kind of strategy
  EXPECT_EQ(ComputeValidateStats(rows, "", "split x2p").rows, 1);
  EXPECT_NEAR(ComputeValidateStats(rows, "", "split x2p").mean_error, -0.2, 1e-12);
  EXPECT_EQ(ComputeValidateStats(rows, "b", "split x2p").rows, 0);
}

}  // namespace
}  // namespace devplace

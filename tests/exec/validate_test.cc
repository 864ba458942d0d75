// The validation suite reader and the statistics `devplace validate` reports.
#include <gtest/gtest.h>

#include <cmath>

#include "apps/validate_report.h"
#include "core/validate_suite.h"

namespace devplace {
namespace {

TEST(ValidateSuite, ReadsTheShippedSuite) {
  Expected<ValidateSuite> suite = ReadValidateSuite(DEVPLACE_SOURCE_DIR "/configs/suites/validate-cpu.yaml");
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  EXPECT_EQ(suite->name, "validate-cpu");
  EXPECT_TRUE(suite->calibrate);
  EXPECT_FALSE(suite->profile_isolated);
  EXPECT_GE(suite->models.size(), 3u);
  EXPECT_GE(suite->models.size() * (suite->algorithms.size() + suite->random_placements), 20u);
}

TEST(ValidateSuite, RejectsBadSuites) {
  const std::string base = "name: v\ntopology: t.yaml\nmodels: [{zoo: resnet50}]\n";
  EXPECT_TRUE(ValidateSuiteFromYaml(base + "algorithms: [single]\n", "v.yaml", "").ok());
  Expected<ValidateSuite> unknown = ValidateSuiteFromYaml(base + "algorithms: [single]\ncolour: red\n", "v.yaml", "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("colour"), std::string::npos) << unknown.error().message;
  EXPECT_FALSE(ValidateSuiteFromYaml(base, "v.yaml", "").ok());  // nothing to place with
  Expected<ValidateSuite> mode =
      ValidateSuiteFromYaml(base + "random_placements: 2\nprofile: {mode: fast}\n", "v.yaml", "");
  ASSERT_FALSE(mode.ok());
  EXPECT_NE(mode.error().message.find("profile.mode"), std::string::npos) << mode.error().message;
  EXPECT_FALSE(ValidateSuiteFromYaml(base + "random_placements: 2\nexec: {timed_steps: 0}\n", "v.yaml", "").ok());
}

TEST(ValidateReport, KendallTauB) {
  EXPECT_DOUBLE_EQ(cli::KendallTauB({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(cli::KendallTauB({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Pairs: (1,2)+ (1,3)+ (1,4)+ (2,3)- (2,4)+ (3,4)+ -> (5 - 1) / 6.
  EXPECT_NEAR(cli::KendallTauB({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6.0, 1e-12);
  // A tie in one sequence: tau-b divides by sqrt((n0 - n1)(n0 - n2)).
  EXPECT_NEAR(cli::KendallTauB({1, 1, 2}, {1, 2, 3}), 2.0 / std::sqrt(2.0 * 3.0), 1e-12);
  EXPECT_DOUBLE_EQ(cli::KendallTauB({1}, {1}), 0.0);
}

TEST(ValidateReport, ErrorStatistics) {
  std::vector<cli::ValidateRow> rows(3);
  rows[0] = {"a", "s0", true, "", 1.0, 1.0, 1.0, 1.1};
  rows[1] = {"a", "s1", true, "", 2.0, 2.0, 2.0, 1.6};
  rows[2] = {"b", "s0", false, "failed"};
  const cli::ValidateStats all = cli::ComputeValidateStats(rows);
  EXPECT_EQ(all.rows, 2);
  EXPECT_NEAR(all.mape, (0.1 + 0.2) / 2, 1e-12);
  EXPECT_NEAR(all.max_error, 0.2, 1e-12);
  EXPECT_NEAR(all.mean_error, (0.1 - 0.2) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(all.kendall_tau, 1.0);
  EXPECT_EQ(cli::ComputeValidateStats(rows, "b").rows, 0);
}

}  // namespace
}  // namespace devplace

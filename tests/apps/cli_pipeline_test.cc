// `devplace search --algo pipeline-dp` writes a pipeline plan (the strategy file's pipeline form) that `devplace
// simulate` reads, and reports the step of that pipeline; the pipeline options are refused for other algorithms.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/apps/cli_runner.h"

namespace devplace::testing {
namespace {

TEST(CliPipeline, PipelineDpWritesAPlanThatSimulateReads) {
  const std::string dir = FreshDir("pipeline_dp");
  WriteText(dir, "g.json", kTinyGraph);
  WriteText(dir, "t.yaml", kPairTopology);
  const CliRun search = RunDevplace({"search", "--algo", "pipeline-dp", "--microbatches", "2", "--schedule",
                                     "eager-1f1b", "-g", "g.json", "-t", "t.yaml", "-o", "p.json", "--json"},
                                    dir);
  ASSERT_EQ(search.exit_code, 0) << search.err;
  const nlohmann::json found = nlohmann::json::parse(search.out);
  const nlohmann::json plan = nlohmann::json::parse(ReadText(dir + "/p.json"));
  ASSERT_TRUE(plan.contains("pipeline")) << plan.dump();
  EXPECT_EQ(plan["pipeline"]["microbatches"], 2);
  EXPECT_EQ(plan["pipeline"]["schedule"], "eager-1f1b");
  const CliRun simulate = RunDevplace({"simulate", "-g", "g.json", "-t", "t.yaml", "-p", "p.json", "--json"}, dir);
  ASSERT_EQ(simulate.exit_code, 0) << simulate.err;
  const nlohmann::json simulated = nlohmann::json::parse(simulate.out);
  EXPECT_EQ(simulated["pipeline"]["schedule"], "eager-1f1b");
  EXPECT_DOUBLE_EQ(found["step_time_ms"].get<double>(), simulated["step_time_ms"].get<double>());

  const CliRun other = RunDevplace({"search", "--algo", "single", "--microbatches", "2", "-g", "g.json", "-t",
                                    "t.yaml", "-o", "q.json"},
                                   dir);
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("--microbatches and --schedule apply to --algo pipeline-dp only"), std::string::npos)
      << other.err;
}

}  // namespace
}  // namespace devplace::testing

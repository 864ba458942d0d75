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

// `devplace run` executes a pipeline plan file: the measured step next to the simulated one, and per stage the
// measured and simulated busy time; a graph whose ops have no sample dimension to cut into micro-batches, and
// --processes, are refused with one line.
TEST(CliPipeline, RunExecutesAPipelinePlan) {
  const std::string dir = FreshDir("pipeline_run");
  WriteText(dir, "g.json", kTinyGraph);
  WriteText(dir, "t.yaml", kPairTopology);
  const std::string sample = R"("flops": 8388608, "dims": [{"kind": "sample", "size": 64, "input_axis": 0,
      "output_axis": 0}, {"kind": "parameter", "size": 256, "input_axis": -1, "output_axis": 1}]}],)";
  std::string batched = Replace(kTinyGraph, R"("flops": 8388608}],)", sample);
  batched = Replace(batched, R"("shape": [64, 256]},)",
                    R"("shape": [64, 256], "dims": [{"kind": "sample", "size": 64, "input_axis": -1,
      "output_axis": 0}]},)");
  WriteText(dir, "b.json", batched);
  const std::string plan = R"({"format": "devplace.strategy", "version": 1, "graph": "tiny", "topology": "pair",
 "pipeline": {"microbatches": 2, "schedule": "gpipe",
   "stages": [{"name": "in", "layers": {"first": "in", "last": "in"}, "devices": ["gpu0"]},
              {"name": "fc", "layers": {"first": "fc", "last": "fc"}, "devices": ["gpu1"]}]}})";
  WriteText(dir, "p.json", plan);
  const std::vector<std::string> run = {"run", "-t", "t.yaml", "-p", "p.json", "--warmup", "0", "--repeats", "1",
                                        "--backend", "cpu", "--json"};
  std::vector<std::string> args = run;
  args.insert(args.end(), {"-g", "b.json"});
  const CliRun ok = RunDevplace(args, dir);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const nlohmann::json result = nlohmann::json::parse(ok.out);
  ASSERT_EQ(result["pipeline"]["stages"].size(), 2u) << ok.out;
  EXPECT_EQ(result["pipeline"]["schedule"], "gpipe");
  for (const nlohmann::json& stage : result["pipeline"]["stages"]) {
    EXPECT_GT(stage["busy_ms"].get<double>(), 0.0) << stage.dump();
    EXPECT_GT(stage["simulated_busy_ms"].get<double>(), 0.0) << stage.dump();
  }
  EXPECT_GT(result["measured_ms"]["median"].get<double>(), 0.0);
  EXPECT_EQ(result["copies"], 2);  // each micro-batch's activations from gpu0 to gpu1

  args = run;
  args.insert(args.end(), {"-g", "g.json"});
  const CliRun unbatched = RunDevplace(args, dir);
  EXPECT_EQ(unbatched.exit_code, 1);
  EXPECT_NE(unbatched.err.find("stage 'in': op 'x' has no sample dimension"), std::string::npos) << unbatched.err;
  args.back() = "b.json";
  args.insert(args.end(), {"--processes", "2"});
  const CliRun processes = RunDevplace(args, dir);
  EXPECT_EQ(processes.exit_code, 1);
  EXPECT_NE(processes.err.find("a pipeline plan runs in one process"), std::string::npos) << processes.err;
}

}  // namespace
}  // namespace devplace::testing

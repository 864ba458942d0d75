// RunCompareSuite end to end on a small suite: every cell searched and simulated, the report files written, and bad
// suites refused before anything is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "workflows/compare.h"

namespace devplace {
namespace {

std::string TempDir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("devplace-workflows-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

CompareSuite SmallSuite() {
  Expected<CompareSuite> suite = CompareSuiteFromYaml(
      "name: small\nseed: 3\nbaseline: single\nbudget: {evaluations: 50}\n"
      "models: [{family: nmt, seeds: [1, 2], target_ops: 200}]\n"
      "topologies: [" DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml]\n"
      "algorithms: [single, m-etf, mcmc]\n",
      "small.yaml", "");
  EXPECT_TRUE(suite.ok()) << suite.error().message;
  return *suite;
}

TEST(CompareWorkflow, RunsEveryCellAndWritesTheReports) {
  const std::string dir = TempDir("compare");
  std::vector<std::string> seen;
  CompareRunOptions options{dir, "devplace compare --suite small.yaml", {}};
  options.on_cell = [&](size_t index, size_t total, const CompareCell& c, bool done) {
    EXPECT_EQ(total, 6u);
    if (done) seen.push_back(std::to_string(index) + ":" + c.model + "/" + c.algorithm);
  };
  Expected<CompareRun> run = RunCompareSuite(SmallSuite(), options);
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(run->cells.size(), 6u);
  EXPECT_EQ(run->failed, 0);
  std::sort(seen.begin(), seen.end());  // cells finish in any order on several threads
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen.front(), "0:nmt-s1-n200/single");
  EXPECT_EQ(seen.back(), "5:nmt-s2-n200/mcmc");
  for (const CompareCell& c : run->cells) {
    EXPECT_TRUE(c.ok) << c.error;
    EXPECT_GT(c.step_time, 0.0);
  }
  EXPECT_EQ(run->cells[0].algorithm, "single");
  EXPECT_DOUBLE_EQ(SpeedupOverBaseline(run->cells, run->cells[0], "single"), 1.0);
  EXPECT_DOUBLE_EQ(SpeedupOverBaseline(run->cells, run->cells[1], "single"),
                   run->cells[0].step_time / run->cells[1].step_time);
  for (const char* file : {"results.csv", "results.md"}) EXPECT_TRUE(std::filesystem::exists(dir + "/" + file));
  std::ifstream md(dir + "/results.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("devplace compare --suite small.yaml"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CompareWorkflow, SameSuiteSameCellsOnAnyNumberOfThreads) {
  const std::string a = TempDir("compare-a"), b = TempDir("compare-b");
  CompareRunOptions one{a, "x", {}}, three{b, "x", {}};
  one.threads = 1;
  three.threads = 3;
  Expected<CompareRun> first = RunCompareSuite(SmallSuite(), one);
  Expected<CompareRun> second = RunCompareSuite(SmallSuite(), three);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(first->cells.size(), second->cells.size());
  for (size_t i = 0; i < first->cells.size(); ++i) {
    EXPECT_EQ(first->cells[i].model, second->cells[i].model);
    EXPECT_EQ(first->cells[i].algorithm, second->cells[i].algorithm);
    EXPECT_EQ(first->cells[i].step_time, second->cells[i].step_time) << first->cells[i].algorithm;
    EXPECT_EQ(first->cells[i].evaluations, second->cells[i].evaluations) << first->cells[i].algorithm;
  }
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

TEST(CompareWorkflow, BadSuitesAreRefusedBeforeAnythingIsWritten) {
  const std::string dir = TempDir("compare-bad");
  CompareSuite unknown_algorithm = SmallSuite();
  unknown_algorithm.algorithms[1] = "m-etff";
  Expected<CompareRun> run = RunCompareSuite(unknown_algorithm, {dir, "x", {}});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().message.find("small.yaml: algorithms[1]: "), 0u) << run.error().message;
  EXPECT_NE(run.error().message.find("m-etff"), std::string::npos) << run.error().message;
  EXPECT_FALSE(std::filesystem::exists(dir));

  CompareSuite missing_file = SmallSuite();
  missing_file.models.push_back(GraphSource{.file = "/nonexistent/g.json"});
  run = RunCompareSuite(missing_file, {dir, "x", {}});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().message.find("small.yaml: models[2]: /nonexistent/g.json"), 0u) << run.error().message;
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace devplace

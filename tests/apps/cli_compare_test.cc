// `devplace compare` survives being killed and a full disk: after SIGKILL at several points, `--resume` finishes
// the run with the results of an uninterrupted one, taking the cells finished before the kill from DIR/cells.json
// instead of recomputing them; a progress file that cannot be written stops the run with one line.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "tests/apps/cli_runner.h"

namespace devplace::testing {
namespace {

namespace fs = std::filesystem;

// Eight cells: two generated graphs on one machine, four algorithms; MCMC and random search with a budget in
// evaluations, so every cell is deterministic.
std::string Suite() {
  return std::string("name: kill\nseed: 5\nbaseline: single\nbudget: {evaluations: 300}\n"
                     "models: [{family: nmt, seeds: [1, 2], target_ops: 200}]\n"
                     "topologies: [") + DEVPLACE_SOURCE_DIR + "/configs/topologies/dgx1-v100.yaml]\n"
                     "algorithms: [single, m-etf, random, mcmc]\n";
}
constexpr size_t kCells = 8;

// The number of cells `dir`/cells.json records (-1 while it does not exist).
int FinishedCells(const std::string& dir) {
  const std::string text = ReadText(dir + "/cells.json");
  if (text.empty()) return -1;
  return static_cast<int>(nlohmann::json::parse(text).at("cells").size());
}

TEST(CliCompare, ResumesAfterSigkillWithTheSameResultsAndWithoutRecomputing) {
  const std::string dir = FreshDir("compare-kill");
  WriteText(dir, "s.yaml", Suite());
  const CliRun whole = RunDevplace({"compare", "--suite", "s.yaml", "-o", "whole", "--json"}, dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const nlohmann::json reference = nlohmann::json::parse(whole.out).at("cells");
  ASSERT_EQ(reference.size(), kCells);
  EXPECT_EQ(FinishedCells(dir + "/whole"), static_cast<int>(kCells));

  // Kill points: as soon as the progress file exists (no cell finished), after one cell, after five.
  for (int point : {0, 1, 5}) {
    const std::string out = "killed" + std::to_string(point);
    const CliProcess p = StartDevplace({"compare", "--suite", "s.yaml", "-o", out, "--json"}, dir);
    ASSERT_GT(p.pid, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (FinishedCells(dir + "/" + out) < point && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ::kill(p.pid, SIGKILL);
    const CliRun killed = FinishDevplace(p);
    ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << "point " << point << " (" << killed.err << ")";
    const int done = FinishedCells(dir + "/" + out);
    ASSERT_GE(done, point);
    ASSERT_LT(done, static_cast<int>(kCells)) << "the run finished before it was killed";
    EXPECT_FALSE(fs::exists(dir + "/" + out + "/results.csv"));
    const nlohmann::json journal = nlohmann::json::parse(ReadText(dir + "/" + out + "/cells.json")).at("cells");

    const CliRun resumed = RunDevplace({"compare", "--suite", "s.yaml", "-o", out, "--resume", "--json"}, dir);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    const nlohmann::json cells = nlohmann::json::parse(resumed.out).at("cells");
    ASSERT_EQ(cells.size(), kCells);
    for (size_t i = 0; i < kCells; ++i) {
      SCOPED_TRACE("point " + std::to_string(point) + ", cell " + std::to_string(i));
      for (const char* key : {"model", "topology", "algorithm", "ok", "step_time_ms", "oom", "evaluations",
                              "speedup_over_baseline"})
        EXPECT_EQ(cells[i].at(key), reference[i].at(key)) << key;
      // Cells finish in any order (several at once): the journal names each finished cell.
      const nlohmann::json* recorded = nullptr;
      for (const nlohmann::json& j : journal)
        if (j.at("model") == cells[i].at("model") && j.at("topology") == cells[i].at("topology") &&
            j.at("algorithm") == cells[i].at("algorithm"))
          recorded = &j;
      EXPECT_EQ(cells[i].at("resumed").get<bool>(), recorded != nullptr);
      // Not recomputed: the search time is the killed run's own, to the last bit.
      if (recorded != nullptr) {
        EXPECT_EQ(cells[i].at("search_seconds"), recorded->at("search_seconds"));
      }
    }
    // results.csv apart from its last column, search_seconds.
    EXPECT_EQ(WithoutLastColumn(ReadText(dir + "/" + out + "/results.csv")),
              WithoutLastColumn(ReadText(dir + "/whole/results.csv")));
  }
}

TEST(CliCompare, ResumeRefusesAnotherSuiteAndNeedsARun) {
  const std::string dir = FreshDir("compare-resume-other");
  WriteText(dir, "s.yaml", Suite());
  WriteText(dir, "t.yaml", Replace(Suite(), "seed: 5", "seed: 6"));
  const CliRun none = RunDevplace({"compare", "--suite", "s.yaml", "-o", "out", "--resume"}, dir);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "devplace: out/cells.json: cannot open: No such file or directory (nothing to resume: run "
                      "without --resume)\n");
  EXPECT_FALSE(fs::exists(dir + "/out"));
  const CliRun first = RunDevplace({"compare", "--suite", "s.yaml", "-o", "out", "--json"}, dir);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string cells = ReadText(dir + "/out/cells.json");
  const CliRun other = RunDevplace({"compare", "--suite", "t.yaml", "-o", "out", "--resume"}, dir);
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_EQ(other.err, "devplace: out/cells.json: inputs_sha256: the run in out is of other inputs (the suite, a "
                       "graph or a machine changed); run without --resume to start afresh\n");
  EXPECT_EQ(ReadText(dir + "/out/cells.json"), cells);
  // Resuming a finished run recomputes nothing and writes the same reports.
  const CliRun again = RunDevplace({"compare", "--suite", "s.yaml", "-o", "out", "--resume", "--json"}, dir);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  nlohmann::json before = nlohmann::json::parse(first.out).at("cells"), after = nlohmann::json::parse(again.out).at("cells");
  ASSERT_EQ(after.size(), kCells);
  for (size_t i = 0; i < kCells; ++i) {
    EXPECT_TRUE(after[i].at("resumed").get<bool>());
    after[i].erase("resumed");
    before[i].erase("resumed");
    EXPECT_EQ(after[i], before[i]);  // search_seconds included: nothing was searched again
  }
}

// A full disk (a file-size limit smaller than the progress file grows to) stops the run with one line after the
// last cell recorded; --resume continues from there once there is room.
TEST(CliCompare, AFullDiskStopsWithOneLineAndTheRunResumes) {
  const std::string dir = FreshDir("compare-disk-full");
  WriteText(dir, "s.yaml", Suite());
  const CliRun full =
      RunDevplace({"compare", "--suite", "s.yaml", "-o", "out", "--json"}, dir, CliLimits{.file_size_bytes = 1200});
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_EQ(full.err, "devplace: out/cells.json: cannot write: File too large\n");
  EXPECT_EQ(full.out, "");
  const int done = FinishedCells(dir + "/out");
  EXPECT_GT(done, 0);
  EXPECT_LT(done, static_cast<int>(kCells));
  EXPECT_EQ(ListTree(dir + "/out"), std::vector<std::string>{"cells.json"});  // no temporary left
  const CliRun resumed = RunDevplace({"compare", "--suite", "s.yaml", "-o", "out", "--resume", "--json"}, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const nlohmann::json cells = nlohmann::json::parse(resumed.out).at("cells");
  int resumed_cells = 0;
  for (const nlohmann::json& c : cells) resumed_cells += c.at("resumed").get<bool>();
  EXPECT_EQ(resumed_cells, done);
}

}  // namespace
}  // namespace devplace::testing

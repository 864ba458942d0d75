#include "tests/agents/learned/same_runs.h"

#include <gtest/gtest.h>

#include <sstream>

#include "agents/learned/checkpoint.h"
#include "agents/learned/policy.h"
#include "config/experiment_config.h"
#include "core/atomic_file.h"

namespace devplace::learntest {

std::string LogWithoutWallTime(const std::string& path) {
  Expected<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok());
  std::istringstream in(*text);
  std::string line, out;
  while (std::getline(in, line)) out += line.substr(0, line.rfind(',')) + "\n";
  return out;
}

void ExpectSameRuns(const TrainSummary& a, const TrainSummary& b, const std::string& config) {
  EXPECT_EQ(b.iterations, a.iterations);
  EXPECT_EQ(b.evaluations, a.evaluations);
  Expected<CheckpointMeta> ma = ReadCheckpointMeta(a.checkpoint_dir), mb = ReadCheckpointMeta(b.checkpoint_dir);
  ASSERT_TRUE(ma.ok() && mb.ok());
  EXPECT_EQ(ma->rng_state, mb->rng_state);
  EXPECT_EQ(ma->best_relative_times, mb->best_relative_times);
  Expected<ExperimentConfig> exp = ReadExperimentConfig(config);
  ASSERT_TRUE(exp.ok()) << exp.error().message;
  PolicyNet na(exp->policy, 0), nb(exp->policy, 1);
  torch::optim::Adam oa(na.module().parameters()), ob(nb.module().parameters());
  ASSERT_TRUE(LoadCheckpointTensors(a.checkpoint_dir, *ma, na, &oa).ok());
  ASSERT_TRUE(LoadCheckpointTensors(b.checkpoint_dir, *mb, nb, &ob).ok());
  auto pa = na.module().named_parameters(), pb = nb.module().named_parameters();
  ASSERT_GT(pa.size(), 0u);
  for (const auto& p : pa) EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
  EXPECT_EQ(LogWithoutWallTime(a.log_path), LogWithoutWallTime(b.log_path));
}

bool SameParameters(const std::string& a, const std::string& b, const std::string& config) {
  Expected<CheckpointMeta> ma = ReadCheckpointMeta(a), mb = ReadCheckpointMeta(b);
  Expected<ExperimentConfig> exp = ReadExperimentConfig(config);
  EXPECT_TRUE(ma.ok() && mb.ok() && exp.ok());
  if (!ma.ok() || !mb.ok() || !exp.ok()) return false;
  PolicyNet na(exp->policy, 0), nb(exp->policy, 1);
  EXPECT_TRUE(LoadCheckpointTensors(a, *ma, na, nullptr).ok());
  EXPECT_TRUE(LoadCheckpointTensors(b, *mb, nb, nullptr).ok());
  auto pa = na.module().named_parameters(), pb = nb.module().named_parameters();
  EXPECT_GT(pa.size(), 0u);
  for (const auto& p : pa)
    if (!torch::equal(p.value(), pb[p.key()])) return false;
  return true;
}

}  // namespace devplace::learntest

// The executor: every op type runs with the graph's shapes, a two-device run computes the same numbers as a
// one-device run, stand-ins are counted, and bad strategies and options are rejected with a message.
#include <gtest/gtest.h>

#include "core/strategy.h"
#include "datasets/layers.h"
#include "exec/executor.h"
#include "tests/testing/exec_graphs.h"

namespace devplace {
namespace {

using testing::ConvTrainingGraph;
using testing::CpuLocal;
using testing::SequenceTrainingGraph;
using testing::SpreadGroups;

ExecOptions Quick() {
  ExecOptions options;
  options.warmup_steps = 1;
  options.timed_steps = 2;
  options.backend = "cpu";
  return options;
}

TEST(Executor, EveryConvOpRunsWithTheGraphsShapes) {
  const Graph g = ConvTrainingGraph();
  const Topology t = CpuLocal();
  Expected<ExecResult> r = ExecuteStrategy(g, t, Strategy::AllOn(g.num_ops(), 0), Quick());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stand_in_ops, 0) << (r->stand_in_types.empty() ? "" : r->stand_in_types[0]);
  EXPECT_EQ(r->backend.name, "cpu");
  ASSERT_EQ(r->step_seconds.size(), 2u);
  EXPECT_GT(r->median_step, 0.0);
  EXPECT_LE(r->min_step, r->median_step);
  EXPECT_GE(r->max_step, r->median_step);
  EXPECT_GT(r->device_busy_seconds[0], 0.0);
  EXPECT_LE(r->device_busy_seconds[0], r->max_step);
  EXPECT_EQ(r->device_busy_seconds[1], 0.0);
  EXPECT_EQ(r->num_copies, 0);
  EXPECT_EQ(r->device_ops[0], g.num_ops());
  ASSERT_EQ(static_cast<int32_t>(r->op_seconds.size()), g.num_ops());
}

TEST(Executor, EverySequenceOpRunsWithTheGraphsShapes) {
  const Graph g = SequenceTrainingGraph();
  Expected<ExecResult> r = ExecuteStrategy(g, CpuLocal(), Strategy::AllOn(g.num_ops(), 1), Quick());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stand_in_ops, 0) << (r->stand_in_types.empty() ? "" : r->stand_in_types[0]);
  EXPECT_GT(r->device_busy_seconds[1], 0.0);
  EXPECT_EQ(r->device_busy_seconds[0], 0.0);
}

// Same seed, same number of steps: every op's tensors must be bit-identical whichever device computed them.
void ExpectSameNumbers(const Graph& g) {
  const Topology t = CpuLocal();
  ExecOptions options = Quick();
  options.record_checksums = true;
  Expected<ExecResult> one = ExecuteStrategy(g, t, Strategy::AllOn(g.num_ops(), 0), options);
  Expected<ExecResult> two = ExecuteStrategy(g, t, SpreadGroups(g), options);
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_GT(two->num_copies, 0);
  EXPECT_GT(two->bytes_copied, 0);
  EXPECT_GT(two->device_busy_seconds[0], 0.0);
  EXPECT_GT(two->device_busy_seconds[1], 0.0);
  ASSERT_EQ(one->op_checksums.size(), two->op_checksums.size());
  int32_t nonzero = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    EXPECT_EQ(one->op_checksums[op], two->op_checksums[op]) << g.op(op).name;
    nonzero += one->op_checksums[op] != 0.0;
  }
  EXPECT_GT(nonzero, g.num_ops() / 2);  // the checksums do see the values
}

TEST(Executor, TwoDevicesComputeTheSameNumbersAsOne) {
  ExpectSameNumbers(ConvTrainingGraph());
  ExpectSameNumbers(SequenceTrainingGraph());
}

TEST(Executor, UpdatesChangeTheWeightsFromStepToStep) {
  const Graph g = ConvTrainingGraph();
  ExecOptions options = Quick();
  options.record_checksums = true;
  Expected<ExecResult> a = ExecuteStrategy(g, CpuLocal(), Strategy::AllOn(g.num_ops(), 0), options);
  options.timed_steps = 3;
  Expected<ExecResult> b = ExecuteStrategy(g, CpuLocal(), Strategy::AllOn(g.num_ops(), 0), options);
  ASSERT_TRUE(a.ok() && b.ok());
  const OpId fc = g.find("head/fc");
  const OpId update = g.find("head/fc/update");
  ASSERT_GE(update, 0);
  EXPECT_NE(a->op_checksums[update], b->op_checksums[update]);  // one more Adam step
  EXPECT_NE(a->op_checksums[fc], b->op_checksums[fc]);          // the forward op reads the updated weights
  EXPECT_EQ(a->op_checksums[g.find("images")], b->op_checksums[g.find("images")]);
}

TEST(Executor, UnknownOpTypesRunAStandInAndAreCounted) {
  LayerBuilder b("mystery");
  const OpId x = b.Input("x", {4, 16});
  const OpId y = b.Pointwise("mystery_op", {x}, {4, 32}, 64.0, "mystery");
  b.Relu(y);
  const Graph g = std::move(b).BuildTraining().value();
  Expected<ExecResult> r = ExecuteStrategy(g, CpuLocal(), Strategy::AllOn(g.num_ops(), 0), Quick());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stand_in_ops, 2);  // the op and its backward op
  ASSERT_EQ(r->stand_in_types.size(), 2u);
  EXPECT_EQ(r->stand_in_types[0], "mystery_op");
  EXPECT_EQ(r->stand_in_types[1], "mystery_op_grad");
}

TEST(Executor, RunsPartitionedAndRejectsInvalidStrategies) {
  const Graph g = ConvTrainingGraph();
  const Topology t = CpuLocal();
  Strategy split = Strategy::AllOn(g.num_ops(), 0);
  const OpId fc = g.find("head/fc");
  split.configs[fc].devices = {0, 1};
  split.configs[fc].degrees.assign(g.op(fc).dims.size(), 1);
  split.configs[fc].degrees[0] = 2;
  split.configs[g.find("head/fc/grad")] = split.configs[fc];
  split.configs[g.find("head/fc/update")] = {{0, 1}, {2}};
  Expected<ExecResult> r = ExecuteStrategy(g, t, split, Quick());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->device_ops[1], 3);  // a part of the op, of its backward op and of its update

  split.configs[fc].degrees[0] = 3;  // more parts than the batch has examples (and than devices)
  r = ExecuteStrategy(g, t, split, Quick());
  ASSERT_FALSE(r.ok());

  Strategy apart = Strategy::AllOn(g.num_ops(), 0);
  apart.configs[g.find("head/fc/grad")].devices = {1};  // separated from its colocated forward op
  r = ExecuteStrategy(g, t, apart, Quick());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("head/fc"), std::string::npos) << r.error().message;

  r = ExecuteStrategy(g, t, Strategy::AllOn(g.num_ops(), 2), Quick());
  EXPECT_FALSE(r.ok());
}

TEST(Executor, ValidatesOptionsAndResolvesBackends) {
  ExecOptions bad = Quick();
  bad.timed_steps = 0;
  EXPECT_FALSE(ValidateExecOptions(bad).ok());
  bad = Quick();
  bad.backend = "tpu";
  EXPECT_NE(ValidateExecOptions(bad).error().message.find("tpu"), std::string::npos);

  const Topology t = CpuLocal();
  Expected<BackendInfo> cpu = ResolveBackend("auto", t);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->name, "cpu");  // cpu-local's devices are CPU cores
  EXPECT_GE(cpu->cpu_cores, 1);
  Expected<BackendInfo> cuda = ResolveBackend("cuda", t);
  ASSERT_TRUE(cuda.ok());
  if (cuda->cuda_devices == 0) {
    EXPECT_EQ(cuda->name, "cpu");
    EXPECT_NE(cuda->note.find("CUDA"), std::string::npos);
  }
  EXPECT_FALSE(ResolveBackend("gpu", t).ok());
}

}  // namespace
}  // namespace devplace

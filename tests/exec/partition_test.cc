// Partitioned execution: one training step of a small MLP, CNN and Transformer under data parallelism, Tofu-DP's
// strategy and a parameter-dimension split equals the single-device step (loss, synchronised weight gradients and
// updated weights within 1e-5 relative), in one process and as two ranks over Gloo (one device each); a tensor
// consumed by several ops on another device moves once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include "agents/search.h"
#include "agents/tofu_dp.h"
#include "core/strategy.h"
#include "datasets/layers.h"
#include "exec/executor.h"
#include "exec/multiprocess.h"
#include "exec/profiler.h"
#include "sim/cost_model.h"
#include "sim/partition.h"
#include "tests/testing/exec_graphs.h"
#include "tests/testing/exec_ranks.h"

namespace devplace {
namespace {

using testing::CpuLocal;

Graph Mlp() {
  LayerBuilder b("mlp");
  const OpId x = b.Input("x", {8, 32});
  const OpId labels = b.Input("labels", {8}, DType::kI64);
  const OpId h = b.Relu(b.Linear({x}, 64, true, "fc1"));
  const OpId y = b.Linear({h}, 10, true, "fc2");
  b.SoftmaxCrossEntropy(y, labels);
  return std::move(b).BuildTraining().value();
}

Graph Cnn() {
  LayerBuilder b("cnn");
  const OpId x = b.Input("images", {4, 3, 8, 8});
  const OpId labels = b.Input("labels", {4}, DType::kI64);
  OpId h = b.Relu(b.Conv2d(x, ConvSpec::Same(8, 3, 1, true), "conv1"));
  h = b.Pool2d(h, PoolKind::kMax, 2, 2, 0);
  h = b.Relu(b.Conv2d(h, ConvSpec::Same(16, 3, 1, false), "conv2"));
  h = b.Flatten(h);
  b.SoftmaxCrossEntropy(b.Linear({h}, 10, true, "fc"), labels);
  return std::move(b).BuildTraining().value();
}

Graph Transformer() { return testing::TinyTransformer(4, 8, 50, 32, 4); }

Strategy Searched(const Graph& g, const Topology& t, const std::string& algo) {
  SearchProblem problem{&g, &t, MakeAnalyticCostModel(), SimOptions{}};
  Expected<std::unique_ptr<SearchAlgorithm>> a = MakeSearchAlgorithm(algo);
  EXPECT_TRUE(a.ok());
  Expected<SearchResult> r = (*a)->Search(problem, SearchRequest{});
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r->strategy;
}

// Tofu's bisection applied on both devices (its DP's choice at the one level), even where the search would find one
// device faster for these tiny graphs.
Strategy TofuSplit(const Graph& g, const Topology& t) {
  SearchProblem problem{&g, &t, MakeAnalyticCostModel(), SimOptions{}};
  TofuPlanner planner(problem, TofuOptions{});
  while (planner.levels_applied() < planner.num_levels()) {
    const TofuLevelProblem level = planner.NextLevel();
    const std::optional<TofuLevelSolution> solution = SolveTofuLevel(level, TofuOptions{}.max_states);
    EXPECT_TRUE(solution.has_value());
    planner.Apply(level, solution->choice);
  }
  return planner.ToStrategy();
}

// Every op with a parameter dimension (and its backward and update ops) split along it over both devices; the
// other ops on device 0.
Strategy ParameterSplit(const Graph& g) {
  Strategy s = Strategy::AllOn(g.num_ops(), 0);
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const Op& o = g.op(op);
    if (o.role != OpRole::kForward) continue;
    for (size_t j = 0; j < o.dims.size(); ++j) {
      if (o.dims[j].kind != DimKind::kParameter || o.dims[j].input_axis >= 0 || o.dims[j].size < 2) continue;
      for (OpId other = 0; other < g.num_ops(); ++other) {
        if (g.op(other).colocation != o.colocation) continue;
        OpConfig& c = s.configs[other];
        c.devices = {0, 1};
        c.degrees.assign(g.op(other).dims.size(), 1);
        c.degrees[g.op(other).role == OpRole::kUpdate ? 0 : j] = 2;
      }
      break;
    }
  }
  return s;
}

// max |a - b| <= 1e-5 max |a| (and equal sizes), over the elements where `where` is non-zero (all when empty).
void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, const std::string& what,
                 const std::vector<char>& where = {}) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 0.0, diff = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(static_cast<double>(a[i])));
    if (where.empty() || where[i]) diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  EXPECT_LE(diff, 1e-5 * std::max(scale, 1e-30)) << what << ": max difference " << diff << " at scale " << scale;
}

// `strategy` run as two ranks of a Gloo group on loopback (device d on rank d); rank 0's result.
Expected<ExecResult> RunAsTwoRanks(const Graph& g, const Strategy& strategy, const ExecOptions& options) {
  std::vector<Expected<ExecResult>> results = testing::RunAsTwoRanks(g, CpuLocal(), strategy, options);
  if (!results[1]) return results[1].error();
  return results[0];
}

void ExpectSameStep(const Graph& g, const Strategy& strategy, int32_t min_split_ops, bool two_ranks = false) {
  const Topology t = CpuLocal();
  Expected<ExecResult> one = ExecuteStrategy(g, t, Strategy::AllOn(g.num_ops(), 0), testing::OneRecordedCpuStep());
  const ExecOptions options = testing::OneRecordedCpuStep();
  Expected<ExecResult> split =
      two_ranks ? RunAsTwoRanks(g, strategy, options) : ExecuteStrategy(g, t, strategy, options);
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_TRUE(split.ok()) << split.error().message;
  EXPECT_EQ(split->stand_in_ops, 0) << (split->stand_in_types.empty() ? "" : split->stand_in_types[0]);
  int32_t split_ops = 0, compared = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    split_ops += strategy.configs[op].num_parts() > 1;
    const Op& o = g.op(op);
    const bool loss = o.type == "softmax_cross_entropy";
    if (!loss && o.role == OpRole::kForward) continue;  // the loss, weight gradients and new weights
    if (one->op_values[op].empty()) continue;
    // Adam's first step moves a weight by about lr * g / |g|, a function of the gradient's sign: where a gradient is
    // zero up to rounding (e.g. a key projection's bias, which softmax ignores) the new weight is rounding noise in
    // both runs. The gradients themselves are compared everywhere.
    std::vector<char> where;
    if (o.role == OpRole::kUpdate) {
      const std::vector<float>& grad = one->op_values[g.find(o.forward_op + "/grad")];
      float top = 0.0f;
      for (float x : grad) top = std::max(top, std::abs(x));
      for (float x : grad) where.push_back(std::abs(x) > 1e-3f * top);
    }
    ExpectClose(one->op_values[op], split->op_values[op], g.name() + " " + o.name, where);
    ++compared;
  }
  EXPECT_GE(split_ops, min_split_ops);
  EXPECT_GT(compared, 3);
}

TEST(Partitioned, DataParallelEqualsOneDevice) {
  for (const Graph& g : {Mlp(), Cnn(), Transformer()}) {
    const Strategy dp = Searched(g, CpuLocal(), "data-parallel");
    ExpectSameStep(g, dp, g.num_ops());
    Expected<ExecResult> r = ExecuteStrategy(g, CpuLocal(), dp, testing::OneRecordedCpuStep());
    ASSERT_TRUE(r.ok());
    int32_t all_reduces = 0;
    for (const CollectiveTime& c : r->collectives) {
      all_reduces += c.kind == "all-reduce";
      EXPECT_GT(c.seconds, 0.0);
      EXPECT_GT(c.bytes, 0);
    }
    EXPECT_GT(all_reduces, 0) << g.name();  // the gradients of the replicated weights
  }
}

// Redundant copies (an OpConfig with more devices than parts): fc2 and its backward op run whole on both devices
// while the rest is data parallel; each copy reads what it needs from the nearest owner, and the copies' weight
// gradients need no exchange.
TEST(Partitioned, CopiesEqualOneDevice) {
  const Graph g = Mlp();
  Strategy s = Searched(g, CpuLocal(), "data-parallel");
  for (const char* name : {"fc2", "fc2/grad", "fc2/update"}) {
    OpConfig& c = s.configs[g.find(name)];
    c.degrees.assign(c.degrees.size(), 1);
    if (std::string(name) == "fc2/update") c.degrees[0] = 2;
  }
  ExpectSameStep(g, s, g.num_ops());
}

TEST(Partitioned, TofuDpEqualsOneDevice) {
  for (const Graph& g : {Mlp(), Cnn(), Transformer()}) ExpectSameStep(g, TofuSplit(g, CpuLocal()), 4);
}

TEST(Partitioned, ParameterSplitEqualsOneDevice) {
  for (const Graph& g : {Mlp(), Cnn(), Transformer()}) ExpectSameStep(g, ParameterSplit(g), 6);
}

// ZeRO-3 (OpConfig::shard_weights on every op with weights and its backward op, the updates split as data
// parallelism splits them): each replica keeps its piece of the weights, all-gathers the rest before its forward and
// its backward part (freeing them after), and the gradients are reduce-scattered instead of all-reduced.
TEST(Partitioned, ZeroThreeEqualsOneDevice) {
  for (const Graph& g : {Mlp(), Cnn(), Transformer()}) {
    Strategy s = Searched(g, CpuLocal(), "data-parallel");
    int32_t weighted = 0;
    for (OpId op = 0; op < g.num_ops(); ++op) {
      const Op& o = g.op(op);
      const OpId f = o.role == OpRole::kBackward ? g.find(o.forward_op) : op;
      if (o.role == OpRole::kUpdate || f < 0 || g.op(f).param_bytes == 0) continue;
      s.configs[op].shard_weights = true;
      weighted += o.role == OpRole::kForward;
    }
    ASSERT_TRUE(ValidateStrategy(s, g, CpuLocal()).ok()) << g.name();
    ExpectSameStep(g, s, g.num_ops());
    Expected<ExecResult> r = ExecuteStrategy(g, CpuLocal(), s, testing::OneRecordedCpuStep());
    ASSERT_TRUE(r.ok()) << r.error().message;
    std::map<std::string, int32_t> kinds;
    for (const CollectiveTime& c : r->collectives) ++kinds[c.kind];
    EXPECT_EQ(kinds["all-gather"], 2 * weighted) << g.name();  // before the forward and before the backward
    EXPECT_EQ(kinds["reduce-scatter"], weighted) << g.name();
    EXPECT_EQ(kinds["all-reduce"], 0) << g.name();
    // Three steps: the updated pieces are kept and gathered again (loss and gradients of the third step).
    ExecOptions three = testing::OneRecordedCpuStep();
    three.warmup_steps = 2;
    Expected<ExecResult> one = ExecuteStrategy(g, CpuLocal(), Strategy::AllOn(g.num_ops(), 0), three);
    Expected<ExecResult> zero = ExecuteStrategy(g, CpuLocal(), s, three);
    ASSERT_TRUE(one.ok() && zero.ok());
    for (OpId op = 0; op < g.num_ops(); ++op)
      if (g.op(op).role == OpRole::kBackward || g.op(op).type == "softmax_cross_entropy")
        ExpectClose(one->op_values[op], zero->op_values[op], g.name() + " step 3 " + g.op(op).name);
    if (g.name() != "mlp") continue;
    // one process only, said in one line
    Expected<ExecResult> ranks = RunAsTwoRanks(g, s, testing::OneRecordedCpuStep());
    ASSERT_FALSE(ranks.ok());
    EXPECT_NE(ranks.error().message.find("ZeRO-3 configs (shard_weights) run in one process only"), std::string::npos)
        << ranks.error().message;
  }
}

// The same three strategies as two ranks over Gloo: the parts of each device run in its rank, boxes and
// collective chunks crossing ranks are sent, and the updated weight ranges are exchanged after the step.
TEST(Partitioned, TwoRanksEqualOneDevice) {
  for (const Graph& g : {Mlp(), Cnn(), Transformer()}) {
    SCOPED_TRACE(g.name());
    ExpectSameStep(g, Searched(g, CpuLocal(), "data-parallel"), g.num_ops(), true);
    ExpectSameStep(g, TofuSplit(g, CpuLocal()), 4, true);
    ExpectSameStep(g, ParameterSplit(g), 6, true);
  }
}

// Two ranks time their parts and collectives: both devices compute, each all-reduce spans both ranks, and a
// second and third step (with the weights the ranks exchanged) still run.
TEST(Partitioned, TwoRanksReportTimesOfBothDevices) {
  const Graph g = Transformer();
  ExecOptions options = testing::OneRecordedCpuStep();
  options.warmup_steps = 1;
  options.timed_steps = 2;
  options.record_values = false;
  Expected<ExecResult> r = RunAsTwoRanks(g, Searched(g, CpuLocal(), "data-parallel"), options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->step_seconds.size(), 2u);
  EXPECT_GT(r->median_step, 0.0);
  EXPECT_GT(r->device_busy_seconds[0], 0.0);
  EXPECT_GT(r->device_busy_seconds[1], 0.0);
  ASSERT_FALSE(r->collectives.empty());
  for (const CollectiveTime& c : r->collectives) {
    EXPECT_GT(c.seconds, 0.0) << c.label;
    EXPECT_GT(c.busy_seconds, 0.0) << c.label;
  }
}

// Per-time-step embeddings (an LSTM language model's): their in-edge carries part of the ids (one value per
// sample), so under data parallelism each part reads its rows of it and computes exactly, no stand-in; and as
// two ranks.
// Two time steps' embeddings "lookup" and "lookup_1" sharing the table "lookup" owns, summed into a linear layer
// "logits" and a loss.
Graph TimeStepEmbeddings() {
  LayerBuilder b("steps");
  const OpId ids = b.Input("ids", {4, 3}, DType::kI64);
  const OpId labels = b.Input("labels", {4}, DType::kI64);
  const OpId x0 = b.Embedding(ids, 11, 6, "lookup", "table", 0);
  const OpId x1 = b.Embedding(ids, 11, 6, "lookup", "table", 1);
  b.SoftmaxCrossEntropy(b.Linear({b.Add(x0, x1)}, 5, true, "logits"), labels);
  return std::move(b).BuildTraining().value();
}

TEST(Partitioned, TimeStepEmbeddingsSplitExactly) {
  const Graph g = TimeStepEmbeddings();
  const Strategy dp = Searched(g, CpuLocal(), "data-parallel");
  EXPECT_GT(dp.configs[g.find("lookup")].num_parts(), 1);
  ExpectSameStep(g, dp, g.num_ops());
  ExpectSameStep(g, dp, g.num_ops(), true);
}

// Shared weights (an unrolled RNN's embedding table): only the owner's weight gradient feeds an update, so only it
// is all-reduced between the replicas - as the simulator prices it (a gradient ring for the backward ops with
// ParamBytesOf > 0) - and the later time step's gradient, which nothing reads, is neither synchronised nor reported.
TEST(Partitioned, OnlyGradientsAnUpdateReadsAreAllReduced) {
  const Graph g = TimeStepEmbeddings();
  const Strategy dp = Searched(g, CpuLocal(), "data-parallel");
  const OpId shared_grad = g.find("lookup_1/grad");
  ASSERT_GE(shared_grad, 0);
  ASSERT_GT(dp.configs[shared_grad].num_parts(), 1);
  std::multiset<std::string> priced;
  for (OpId op = 0; op < g.num_ops(); ++op)
    if (g.op(op).role == OpRole::kBackward && sim::ParamBytesOf(g, op) > 0 && dp.configs[op].num_parts() > 1)
      priced.insert(g.op(op).name);
  EXPECT_EQ(priced, (std::multiset<std::string>{"lookup/grad", "logits/grad"}));
  Expected<ExecResult> r = ExecuteStrategy(g, CpuLocal(), dp, testing::OneRecordedCpuStep());
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::multiset<std::string> reduced;
  for (const CollectiveTime& c : r->collectives)
    if (c.kind == "all-reduce") reduced.insert(c.label);
  EXPECT_EQ(reduced, priced);
  EXPECT_TRUE(r->op_values[shared_grad].empty());
  EXPECT_FALSE(r->op_values[g.find("lookup/grad")].empty());
}

// Every op type of the executor's test graphs runs split data-parallel (cut edges, shared weights, broadcast keys
// included); the parts that cannot compute their region exactly are stand-ins, and counted.
TEST(Partitioned, EveryOpTypeRunsDataParallel) {
  for (const Graph& g : {testing::ConvTrainingGraph(), testing::SequenceTrainingGraph()}) {
    const Strategy dp = Searched(g, CpuLocal(), "data-parallel");
    ExecOptions options = testing::OneRecordedCpuStep();
    options.warmup_steps = 1;
    Expected<ExecResult> r = ExecuteStrategy(g, CpuLocal(), dp, options);
    ASSERT_TRUE(r.ok()) << g.name() << ": " << r.error().message;
    EXPECT_GT(r->device_busy_seconds[0], 0.0);
    EXPECT_GT(r->device_busy_seconds[1], 0.0);
    EXPECT_LT(r->stand_in_ops, g.num_ops() / 4) << g.name();
  }
}

// The profile of a strategy's op parts: one entry per part signature, keyed as the simulator looks parts up.
TEST(Partitioned, ProfilesTheParts) {
  const Graph g = Mlp();
  const Strategy dp = Searched(g, CpuLocal(), "data-parallel");
  for (ProfileMode mode : {ProfileMode::kInGraph, ProfileMode::kIsolated}) {
    ProfileOptions options;
    options.mode = mode;
    options.warmup_runs = 1;
    options.timed_runs = 2;
    options.backend = "cpu";
    Expected<std::vector<OpTiming>> parts = ProfileParts(g, CpuLocal(), dp, options);
    ASSERT_TRUE(parts.ok()) << parts.error().message;
    bool fc1 = false;
    for (const OpTiming& t : *parts) {
      EXPECT_GT(t.seconds, 0.0);
      if (t.op_type == "matmul" && t.role == OpRole::kForward && t.shape == std::vector<int64_t>{4, 64}) {
        fc1 = true;
        EXPECT_DOUBLE_EQ(t.flops, g.op(g.find("fc1")).flops / 2);
      }
    }
    EXPECT_TRUE(fc1);  // fc1 [8, 64] in two halves of the batch
  }
}

// A graph input on device 0 read by three ops on device 1 (their backward ops read it too): one copy per step.
TEST(Partitioned, ATensorMovesOncePerDestinationDevice) {
  LayerBuilder b("fanout");
  const OpId x = b.Input("x", {8, 16});
  b.Relu(x, "a");
  b.Tanh(x, "b");
  b.Sigmoid(x, "c");
  const Graph g = std::move(b).BuildTraining().value();
  Strategy plain = Strategy::AllOn(g.num_ops(), 1);
  plain.configs[g.find("x")].devices = {0};
  Expected<ExecResult> r = ExecuteStrategy(g, CpuLocal(), plain, testing::OneRecordedCpuStep());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->num_copies, 1);
  EXPECT_EQ(r->bytes_copied, 8 * 16 * 4);
  // Split along the sample dimension over both devices: device 1's parts need rows 4..8 of x, copied once.
  Strategy split = plain;
  for (OpId op = 0; op < g.num_ops(); ++op)
    if (op != g.find("x")) split.configs[op] = *SplitConfig(g.op(op), {0, 1});
  r = ExecuteStrategy(g, CpuLocal(), split, testing::OneRecordedCpuStep());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->num_copies, 1);
  EXPECT_EQ(r->bytes_copied, 4 * 16 * 4);
}

}  // namespace
}  // namespace devplace

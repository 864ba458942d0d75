// Pipeline plans in the executor: a pipelined step (2-3 stages, 2 and 4 micro-batches, GPipe, 1F1B and
// eager-1F1B, a stage of two devices) equals the single-device step (loss, weight gradients, new weights within
// 1e-5 relative) on a small MLP and a small Transformer; each device runs its stage steps in the schedule's order;
// a two-device stage all-reduces each weight gradient once per step; what the executor does not run is refused
// with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/pipeline.h"
#include "core/topology_yaml.h"
#include "datasets/layers.h"
#include "exec/executor.h"
#include "exec/pipeline.h"
#include "tests/testing/exec_graphs.h"

namespace devplace {
namespace {

Topology FourCores() {
  Expected<Topology> t = TopologyFromYaml(
      "name: four-cores\ndevices:\n"
      "  - {name: \"cpu{i}\", count: 4, kind: cpu, host: localhost, peak_tflops: 0.08, memory_bandwidth_gbs: 10,"
      " memory_gib: 8}\n"
      "switches:\n  - {name: shared-memory, host: localhost}\n"
      "links:\n  - {hub: shared-memory, nodes: [cpu0, cpu1, cpu2, cpu3], bandwidth_gbs: 5, latency_us: 5,"
      " kind: memcpy}\n",
      "four-cores");
  EXPECT_TRUE(t.ok()) << t.error().message;
  return *t;
}

Graph Mlp() {
  LayerBuilder b("mlp");
  const OpId x = b.Input("x", {8, 16});
  const OpId labels = b.Input("labels", {8}, DType::kI64);
  OpId h = b.Relu(b.Linear({x}, 32, true, "fc1"));
  h = b.Tanh(b.Linear({h}, 24, true, "fc2"));
  h = b.Relu(b.Linear({h}, 24, true, "fc3"));
  b.SoftmaxCrossEntropy(b.Linear({h}, 10, true, "fc4"), labels);
  return std::move(b).BuildTraining().value();
}

Graph Transformer() { return testing::TinyTransformer(8, 6, 40, 16, 2); }

// Stages over consecutive forward ops of the topological order: stage i takes `sizes[i]` of them (the last the
// rest) and runs on `devices[i]`.
PipelinePlan Stages(const Graph& g, const std::vector<int32_t>& sizes,
                    const std::vector<std::vector<DeviceId>>& devices, int32_t microbatches,
                    PipelineSchedule schedule) {
  std::vector<OpId> forward;
  for (OpId op : g.topological_order())
    if (g.op(op).role == OpRole::kForward) forward.push_back(op);
  PipelinePlan plan;
  plan.microbatches = microbatches;
  plan.schedule = schedule;
  size_t next = 0;
  for (size_t s = 0; s < devices.size(); ++s) {
    const size_t last = s + 1 == devices.size() ? forward.size() - 1 : next + sizes[s] - 1;
    PipelineStage stage;
    stage.name = "s" + std::to_string(s);
    stage.ops = {StageOps::Kind::kOpRange, forward[next], forward[last], "", ""};
    stage.devices = devices[s];
    plan.stages.push_back(stage);
    next = last + 1;
  }
  return plan;
}

// The largest |a - b| over the elements where `keep` holds, relative to the largest |a|.
double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b, const std::vector<char>& keep) {
  double scale = 1e-30, diff = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
    if (keep.empty() || keep[i]) diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return diff / scale;
}

// The loss, every weight gradient and every new weight of `pipelined` against `single`. New weights are compared
// where the gradient is not zero up to rounding (Adam's first step moves a weight by about lr * sign(g)).
void ExpectSameStep(const Graph& g, const ExecResult& single, const ExecResult& pipelined, const std::string& what) {
  int32_t compared = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const Op& o = g.op(op);
    if ((o.role == OpRole::kForward && o.type != "softmax_cross_entropy") || single.op_values[op].empty()) continue;
    std::vector<char> keep;
    if (o.role == OpRole::kUpdate) {
      const std::vector<float>& grad = single.op_values[g.find(o.forward_op + "/grad")];
      const float top = std::fabs(*std::max_element(grad.begin(), grad.end(), [](float x, float y) {
        return std::fabs(x) < std::fabs(y);
      }));
      for (float x : grad) keep.push_back(std::fabs(x) > 1e-3f * top);
    }
    ASSERT_EQ(single.op_values[op].size(), pipelined.op_values[op].size()) << what << " " << o.name;
    EXPECT_LE(RelativeDifference(single.op_values[op], pipelined.op_values[op], keep), 1e-5) << what << " " << o.name;
    ++compared;
  }
  EXPECT_GT(compared, 6) << what;
}

TEST(PipelineExec, PipelinedStepEqualsOneDevice) {
  const Topology t = FourCores();
  struct Case {
    Graph graph;
    std::vector<int32_t> sizes;
    std::vector<std::vector<DeviceId>> devices;
  };
  const std::vector<Case> cases = {
      {Mlp(), {4, 3}, {{0}, {1, 2}, {3}}},
      {Mlp(), {6}, {{0, 1}, {2}}},
      {Transformer(), {5}, {{0}, {1, 2}}},
      {Transformer(), {4, 5}, {{0, 1}, {2}, {3}}},
  };
  for (const Case& c : cases) {
    Expected<ExecResult> single =
        ExecuteStrategy(c.graph, t, Strategy::AllOn(c.graph.num_ops(), 0), testing::OneRecordedCpuStep());
    ASSERT_TRUE(single.ok()) << single.error().message;
    for (int32_t microbatches : {2, 4})
      for (PipelineSchedule schedule :
           {PipelineSchedule::kGPipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kEagerOneFOneB}) {
        const PipelinePlan plan = Stages(c.graph, c.sizes, c.devices, microbatches, schedule);
        const std::string what = c.graph.name() + " " + std::to_string(plan.stages.size()) + " stages, M = " +
                                 std::to_string(microbatches) + ", " + std::string(ToString(schedule));
        Expected<ExecResult> piped = ExecutePipeline(c.graph, t, plan, testing::OneRecordedCpuStep());
        ASSERT_TRUE(piped.ok()) << what << ": " << piped.error().message;
        EXPECT_EQ(piped->stand_in_ops, 0) << what;
        ExpectSameStep(c.graph, *single, *piped, what);
      }
  }
}

// Each device runs its stage's steps one after another in StageOrder's order, then the update; the stage of two
// devices all-reduces each weight gradient once per step (not once per micro-batch).
TEST(PipelineExec, DevicesFollowTheScheduleAndAllReduceOncePerStep) {
  const Topology t = FourCores();
  const Graph g = Mlp();
  for (PipelineSchedule schedule :
       {PipelineSchedule::kGPipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kEagerOneFOneB}) {
    const PipelinePlan plan = Stages(g, {4, 3}, {{0}, {1, 2}, {3}}, 4, schedule);
    Expected<ExecResult> r = ExecutePipeline(g, t, plan, testing::OneRecordedCpuStep());
    ASSERT_TRUE(r.ok()) << r.error().message;
    for (int32_t s = 0; s < 3; ++s)
      for (DeviceId d : plan.stages[s].devices) {
        std::vector<PipelineStepTime> ran;
        for (const PipelineStepTime& step : r->pipeline_steps)
          if (step.device == d) ran.push_back(step);
        std::sort(ran.begin(), ran.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
        const std::vector<StageStep> order = StageOrder(schedule, 3, s, 4);
        ASSERT_EQ(ran.size(), order.size() + 1) << "device " << d;  // and the update
        for (size_t i = 0; i < order.size(); ++i) {
          EXPECT_EQ(ran[i].stage, s);
          EXPECT_EQ(ran[i].forward, order[i].forward) << ToString(schedule) << " device " << d << " step " << i;
          EXPECT_EQ(ran[i].microbatch, order[i].microbatch) << ToString(schedule) << " device " << d << " step " << i;
          EXPECT_LE(ran[i].end, ran[i + 1].start + 1e-9);  // one step at a time
        }
        EXPECT_EQ(ran.back().microbatch, -1);
      }
    int32_t all_reduces = 0;
    for (const CollectiveTime& c : r->collectives) {
      all_reduces += c.kind == "all-reduce";
      EXPECT_EQ(c.devices, (std::vector<DeviceId>{1, 2})) << c.label;
    }
    EXPECT_EQ(all_reduces, 2);  // fc2/grad and fc3/grad: stage s1 holds fc2, tanh, fc3, relu
  }
}

// Per-time-step embeddings read one column of the ids (an edge carrying part of the input, which the executor reads
// from the whole input): the input runs whole in the first micro-batch, and the step still equals one device's.
TEST(PipelineExec, InputsReadInPartRunWholeInTheFirstMicrobatch) {
  const Topology t = FourCores();
  LayerBuilder b("steps");
  const OpId ids = b.Input("ids", {8, 3}, DType::kI64);
  const OpId labels = b.Input("labels", {8}, DType::kI64);
  const OpId x0 = b.Embedding(ids, 11, 6, "lookup", "table", 0);
  const OpId x1 = b.Embedding(ids, 11, 6, "lookup", "table", 1);
  b.SoftmaxCrossEntropy(b.Linear({b.Relu(b.Linear({b.Add(x0, x1)}, 12, true, "fc"))}, 5, true, "logits"), labels);
  const Graph g = std::move(b).BuildTraining().value();
  Expected<ExecResult> single = ExecuteStrategy(g, t, Strategy::AllOn(g.num_ops(), 0), testing::OneRecordedCpuStep());
  ASSERT_TRUE(single.ok()) << single.error().message;
  const PipelinePlan plan = Stages(g, {5}, {{0, 1}, {2}}, 2, PipelineSchedule::kOneFOneB);
  Expected<Strategy> strategy = MicrobatchStrategy(g, t, plan);
  ASSERT_TRUE(strategy.ok()) << strategy.error().message;
  EXPECT_EQ(strategy->configs[g.find("ids")].devices, std::vector<DeviceId>{0});
  EXPECT_EQ(strategy->configs[g.find("labels")].num_parts(), 4);
  Expected<ExecResult> piped = ExecutePipeline(g, t, plan, testing::OneRecordedCpuStep());
  ASSERT_TRUE(piped.ok()) << piped.error().message;
  EXPECT_EQ(piped->stand_in_ops, 0);
  ExpectSameStep(g, *single, *piped, "steps");
}

TEST(PipelineExec, RefusesWhatItDoesNotRunWithOneLine) {
  const Topology t = FourCores();
  const Graph g = Mlp();
  const PipelinePlan base = Stages(g, {4}, {{0, 1}, {2}}, 2, PipelineSchedule::kOneFOneB);
  auto refused = [&](PipelinePlan plan, const std::string& needle) {
    Expected<ExecResult> r = ExecutePipeline(g, t, plan, testing::OneRecordedCpuStep());
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  };
  PipelinePlan p = base;
  p.delay_weight_gradients = true;
  refused(p, "delay_weight_gradients");
  p = base;
  p.reshard.signal_only = true;
  refused(p, "signal_only");
  p = base;
  p.stages[0].spec = "R,R";
  refused(p, "stage 's0': layout 'R,R'");
  p = base;
  p.stages[0].sharding = {ShardingAnnotation{"fc1", ShardingSpec::Replicated(2), false, ""}};
  refused(p, "stage 's0': intra-stage sharding");
  p = base;
  p.microbatches = 8;  // 8 x 2 slices of a batch of 8
  refused(p, "exceed the batch");
  // The sample-split layout spelled out is the default and runs.
  p = base;
  p.stages[0].spec = "S0,R";
  EXPECT_TRUE(ExecutePipeline(g, t, p, testing::OneRecordedCpuStep()).ok());
}

}  // namespace
}  // namespace devplace

// Sharded large models simulated end to end (issue 17): the shipped Megatron spec on a small GPT shows one forward and
// one backward collective per block in the Chrome trace; the shipped expert-parallel spec on the MoE GPT moves its
// tokens into and out of the experts by all-to-all, priced as the alpha-beta formula on an idle machine, and a larger
// capacity factor costs step time.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "core/sharding_io.h"
#include "core/topology_yaml.h"
#include "datasets/gpt.h"
#include "datasets/layers.h"
#include "datasets/zoo.h"
#include "sim/trace.h"

namespace devplace {
namespace {

Topology DgxH100() { return ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx-h100.yaml").value(); }

Graph BuildGraph(const GptConfig& config) {
  LayerBuilder b("gpt");
  BuildGpt(b, config);
  return std::move(b).BuildTraining().value();
}

// The strategy the shipped spec `file` propagates to on `graph`.
Strategy ShippedStrategy(const Graph& graph, const Topology& topology, const std::string& file) {
  const ShardingRequest req =
      ReadShardingRequestFile(DEVPLACE_SOURCE_DIR "/configs/sharding/" + file, topology, {}).value();
  const ShardingPlan plan = PropagateSharding(graph, req.mesh, req.annotations, req.zero_axis).value();
  Strategy s = LowerSpecs(graph, plan.specs, req.mesh).value();
  EXPECT_TRUE(ValidateStrategy(s, graph, topology).ok());
  return s;
}

SimResult SimulateStep(const Graph& graph, const Topology& topology, const Strategy& strategy, bool timeline) {
  SimOptions options;
  options.keep_timeline = timeline;
  Expected<SimResult> r = Simulate(graph, topology, strategy, MakeAnalyticCostModel(), options);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return std::move(r).value();
}

TEST(ShardedModels, MegatronHasOneForwardAndOneBackwardCollectivePerBlock) {
  const Graph g = BuildGraph(GptConfig{2, 64, 8, 16, 256, 8});
  const Topology t = DgxH100();
  const SimResult r = SimulateStep(g, t, ShippedStrategy(g, t, "megatron.yaml"), true);
  std::map<std::string, int> steps;  // collective tasks per op
  for (const TimelineTask& task : r.timeline)
    if (task.kind == TimelineTask::Kind::kCollective) ++steps[g.op(task.op).name];
  // Per layer: the attention block's and the feed-forward block's row-parallel matmul reduce their partial sums in
  // the forward pass (the consumers then read the reduced slices: an all-reduce), and their gradients in the
  // backward pass; nothing else (replicated ops run on every device and exchange nothing).
  std::map<std::string, int> expected;
  const int per_ring = 8 * 7 * static_cast<int>(t.route(0, 1).size());  // 8 members, 7 steps, hops per step
  for (int layer = 0; layer < 2; ++layer)
    for (const char* op : {"attention_out", "ffn2", "attention_out/grad", "ffn2/grad"})
      expected["decoder/layer" + std::to_string(layer) + "/" + op] = per_ring;
  EXPECT_EQ(steps, expected);
  const std::string trace = ChromeTraceJson(r, g, t).value();
  for (const char* name : {"\"reduce decoder/layer0/ffn2\"", "\"allreduce decoder/layer0/ffn2/grad\"",
                           "\"reduce decoder/layer1/attention_out\"", "\"allreduce decoder/layer1/attention_out/grad\""})
    EXPECT_NE(trace.find(name), std::string::npos) << name;
  // Layer norms and residuals are copied on every device: no tensor moves between replicated ops.
  for (const TimelineTask& task : r.timeline)
    if (task.kind == TimelineTask::Kind::kTransfer) {
      const std::string from = g.op(task.op).name;
      EXPECT_EQ(from.find("_norm"), std::string::npos) << from << " -> " << g.op(task.consumer).name;
    }
}

// The all-to-all out of the MoE dispatch into the experts: on dgx-h100 every GPU sends a chunk of c bytes to each of
// the 7 others through its NVSwitch uplink; alpha-beta over the two-hop route (uplink, downlink; latency a each,
// bandwidth B): 7 chunks leave back to back and the last one crosses the downlink after them, 8c/B + 2a.
TEST(ShardedModels, ExpertParallelAllToAllMatchesAlphaBeta) {
  const Graph g = BuildZooModel("gpt_moe8").value();
  const Topology t = DgxH100();
  const Strategy s = ShippedStrategy(g, t, "expert-parallel.yaml");
  const SimResult r = SimulateStep(g, t, s, true);
  // Every part of the dispatch sends to the 7 other GPUs (its first hops: the uplink of its own GPU).
  const OpId dispatch = g.find("decoder/layer1/dispatch"), experts = g.find("decoder/layer1/expert_ffn1");
  std::map<int32_t, std::set<int32_t>> sends;  // sender part -> links of the first hops
  int32_t first_hops = 0;
  for (const TimelineTask& task : r.timeline) {
    if (task.kind != TimelineTask::Kind::kTransfer || task.op != dispatch || task.consumer != experts) continue;
    const Link& link = t.link(task.resource - t.num_devices());
    if (link.src != s.configs[dispatch].devices[task.part]) continue;
    sends[task.part].insert(task.resource);
    ++first_hops;
  }
  EXPECT_EQ(sends.size(), 8u);
  for (const auto& [part, links] : sends) EXPECT_EQ(links.size(), 1u) << "part " << part;  // its own uplink
  EXPECT_EQ(first_hops, 8 * 7);
  EXPECT_NE(ChromeTraceJson(r, g, t).value().find("\"decoder/layer1/dispatch -> decoder/layer1/expert_ffn1\""),
            std::string::npos);

  // The same two ops alone (an idle machine): dispatch as an input, the experts reading it.
  GraphBuilder b("all_to_all");
  Op from = g.op(dispatch), to = g.op(experts);
  from.type = "input";
  from.flops = 0;
  to.param_bytes = 0;
  int64_t bytes = 0;
  for (int32_t e : g.in_edges(experts))
    if (g.edge(e).src == dispatch) bytes = g.edge(e).bytes;
  const OpId src = b.add_op(from);
  const OpId dst = b.add_op(to);
  b.add_edge(src, dst, bytes);
  const Graph pair = std::move(b).Build().value();
  Strategy ps;
  ps.configs = {s.configs[dispatch], s.configs[experts]};
  const SimResult alone = SimulateStep(pair, t, ps, true);
  double first = 1e9, last = 0;
  for (const TimelineTask& task : alone.timeline)
    if (task.kind == TimelineTask::Kind::kTransfer) {
      first = std::min(first, task.start);
      last = std::max(last, task.end + t.link(task.resource - t.num_devices()).latency);
    }
  const Link& up = t.link(t.route(0, 1)[0]);
  const double chunk = static_cast<double>(bytes) / 64;  // batch slice i of expert j
  const double formula = 8 * chunk / up.bandwidth + 2 * up.latency;
  EXPECT_NEAR((last - first) / formula, 1.0, 0.05) << "simulated " << (last - first) << " s, formula " << formula;
}

TEST(ShardedModels, LargerCapacityFactorRaisesTheStepTime) {
  const Topology t = DgxH100();
  double previous = 0;
  for (double factor : {1.0, 1.25, 1.5, 2.0}) {
    GptConfig config = GptMoe8(8);
    config.capacity_factor = factor;
    const Graph g = BuildGraph(config);
    const double step = SimulateStep(g, t, ShippedStrategy(g, t, "expert-parallel.yaml"), false).step_time;
    EXPECT_GT(step, previous) << "capacity factor " << factor;
    previous = step;
  }
}

}  // namespace
}  // namespace devplace

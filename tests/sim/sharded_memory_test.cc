// Per-device activation memory of Megatron-sharded GPT layers against Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", section 4): with tensor parallel size t and no sequence parallelism a
// layer keeps s b h (10 + 24/t + 5 a s / (h t)) bytes per device in fp16.
#include <gtest/gtest.h>

#include <string>

#include "core/sharding_io.h"
#include "core/topology_yaml.h"
#include "datasets/gpt.h"
#include "datasets/layers.h"
#include "sim/simulator.h"

namespace devplace {
namespace {

// Activation peak (peak minus weights, gradients and optimizer state) of device 0 for GPT `config` under the shipped
// Megatron spec on a mesh of `t` devices.
int64_t ActivationPeak(const GptConfig& config, int t) {
  const Topology topology = ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/dgx-h100.yaml").value();
  LayerBuilder b("gpt");
  BuildGpt(b, config);
  const Graph graph = std::move(b).BuildTraining().value();
  const ShardingRequest req = ReadShardingRequestFile(DEVPLACE_SOURCE_DIR "/configs/sharding/megatron.yaml", topology,
                                                      {}, std::to_string(t))
                                  .value();
  const ShardingPlan plan = PropagateSharding(graph, req.mesh, req.annotations, req.zero_axis).value();
  const Strategy strategy = LowerSpecs(graph, plan.specs, req.mesh).value();
  const SimResult r = Simulate(graph, topology, strategy, MakeAnalyticCostModel(), {}).value();
  return r.devices[0].peak_bytes - r.devices[0].static_bytes;
}

// What one layer keeps per device is the difference between a 4-layer and a 2-layer model, halved: the embedding,
// the head and the backward pass's transient buffers (the peak is reached in the last layer's backward in both) cancel.
// Hand-checked against the paper's term-by-term count, in f32 (4 bytes) and in units of s b h elements:
// - sharded over t (the paper's 24/t bytes = 12/t fp16 elements, the same tensors): q, k, v (3), the attention
//   context (the output projection's input, 1), the first feed-forward matmul's output (the GELU's input, 4) and the
//   GELU's output (4);
// - attention, over t: the scores and the softmax output (2 a s / (h t); the paper's 5 bytes
//   add a dropout mask and the dropout's output, dropout is not modelled);
// - replicated (the paper's 10 bytes): the two layer norms' outputs (the paper keeps their inputs) and the two
//   residual sums (2 + 2, the same 4 tensors as the paper's two layer-norm inputs and two matmul inputs), plus the
//   two row-parallel outputs after their all-reduce (2; the residual add's backward reads its inputs in this
//   training graph) where the paper keeps two 1-byte dropout masks.
// So 4 s b h (6 + 12/t + 2 a s / (h t)) bytes, exactly: the t-dependent part is the paper's 24/t (x 2 for f32), the
// constant part differs only by the dropout masks against the row-parallel outputs. Before the saved output of a
// column-parallel matmul was read as its own shard and reduced outputs were gathered in place, t = 2 and t = 4 kept
// 21.5 and 18.25 units instead of 16 and 11.
TEST(ShardedMemory, MegatronLayerActivationsMatchKorthikanti) {
  constexpr int64_t kBatch = 4, kSeq = 128, kHidden = 256, kHeads = 8;
  const double sbh = static_cast<double>(kSeq * kBatch * kHidden);
  for (int t : {1, 2, 4}) {
    const int64_t two = ActivationPeak(GptConfig{2, kHidden, kHeads, kSeq, 256, kBatch}, t);
    const int64_t four = ActivationPeak(GptConfig{4, kHidden, kHeads, kSeq, 256, kBatch}, t);
    const double per_layer = static_cast<double>(four - two) / 2.0;
    const double expected = 4.0 * sbh * (6.0 + 12.0 / t + 2.0 * kHeads * kSeq / (static_cast<double>(kHidden) * t));
    EXPECT_NEAR(per_layer, expected, 1e-9 * expected) << "t = " << t;
  }
}

}  // namespace
}  // namespace devplace

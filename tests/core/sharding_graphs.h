// Small graphs and machines for the mesh and sharding tests: ops carry the partitionable dimensions the model
// zoo's LayerBuilder gives the same op types (datasets/layers.cc), built directly on core's GraphBuilder.
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "core/topology.h"
#include "core/training_graph.h"

namespace devplace::testing {

inline PartitionDim D(DimKind kind, int32_t out, int32_t in, int64_t size) { return PartitionDim{kind, out, in, size}; }

// Adds forward ops shaped like LayerBuilder's to a GraphBuilder.
class MiniNet {
 public:
  explicit MiniNet(std::string name) : b_(std::move(name)) {}

  OpId Input(const std::string& name, std::vector<int64_t> shape) {
    return Add(name, "input", shape, 0, {D(DimKind::kSample, 0, -1, shape[0])}, {});
  }
  // Dense layer over the last axis: [..., K] -> [..., n] (sample/attribute dims, parameter n, reduction K).
  OpId Linear(const std::string& name, OpId x, int64_t n) {
    std::vector<int64_t> out = shape(x);
    const int64_t k = out.back();
    out.back() = n;
    std::vector<PartitionDim> dims = Same(out, static_cast<int>(out.size()) - 1);
    dims.push_back(D(DimKind::kParameter, static_cast<int32_t>(out.size()) - 1, -1, n));
    dims.push_back(D(DimKind::kReduction, -1, static_cast<int32_t>(out.size()) - 1, k));
    return Add(name, "matmul", out, k * n * 4, std::move(dims), {x});
  }
  OpId Unary(const std::string& name, const std::string& type, OpId x) {
    return Add(name, type, shape(x), 0, Same(shape(x)), {x});
  }
  OpId Binary(const std::string& name, const std::string& type, OpId a, OpId b) {
    return Add(name, type, shape(a), 0, Same(shape(a)), {a, b});
  }
  // Layer norm: every axis but the last, with a learned scale and shift.
  OpId LayerNorm(const std::string& name, OpId x) {
    return Add(name, "layer_norm", shape(x), 2 * shape(x).back() * 4, Same(shape(x), static_cast<int>(shape(x).size()) - 1), {x});
  }
  OpId Loss(const std::string& name, OpId logits, OpId labels) {
    return Add(name, "softmax_cross_entropy", {shape(logits)[0]}, 0, {D(DimKind::kSample, 0, 0, shape(logits)[0])},
               {logits, labels});
  }
  // An op of a caller-chosen type and dims.
  OpId Add(const std::string& name, const std::string& type, std::vector<int64_t> shape, int64_t param_bytes,
           std::vector<PartitionDim> dims, const std::vector<OpId>& inputs, const std::string& colocation = "") {
    Op op{.name = name, .type = type, .layer = "l", .shape = std::move(shape), .param_bytes = param_bytes,
          .flops = 1.0, .colocation = colocation, .dims = std::move(dims)};
    const OpId id = b_.add_op(std::move(op));
    for (OpId in : inputs) b_.add_edge(in, id);
    return id;
  }
  const std::vector<int64_t>& shape(OpId x) const { return b_.op(x).shape; }
  Graph Forward() && { return std::move(b_).Build().value(); }
  Graph Training() && { return DeriveTrainingGraph(std::move(b_).Build().value()).value(); }

 private:
  static std::vector<PartitionDim> Same(const std::vector<int64_t>& shape, int skip = -1) {
    std::vector<PartitionDim> dims;
    for (int i = 0; i < static_cast<int>(shape.size()); ++i)
      if (i != skip) dims.push_back(D(i == 0 ? DimKind::kSample : DimKind::kAttribute, i, i, shape[i]));
    return dims;
  }
  GraphBuilder b_;
};

// A pre-norm MLP block with a residual connection and a loss: x [8, 4, 16] -> ln -> ffn1 (64) -> gelu -> ffn2 (16)
// -> add x -> loss against labels [8, 4].
inline Graph MlpBlock(bool training) {
  MiniNet n("mlp");
  const OpId x = n.Input("x", {8, 4, 16});
  const OpId labels = n.Input("labels", {8, 4});
  const OpId ln = n.LayerNorm("ln", x);
  const OpId h = n.Unary("act", "gelu", n.Linear("ffn1", ln, 64));
  const OpId res = n.Binary("res", "add", x, n.Linear("ffn2", h, 16));
  n.Loss("loss", res, labels);
  return training ? std::move(n).Training() : std::move(n).Forward();
}

// `count` identical devices named gpu0.. on one switch.
inline Topology Gpus(int count) {
  TopologyBuilder t("gpus" + std::to_string(count));
  for (int i = 0; i < count; ++i)
    t.add_device(Device{.name = "gpu" + std::to_string(i), .kind = "v100", .peak_flops_f32 = 1e13,
                        .memory_bandwidth = 9e11, .memory_bytes = int64_t{16} << 30});
  const NodeId sw = t.add_switch(Switch{"nvswitch", "h"});
  for (int i = 0; i < count; ++i) t.add_bidirectional_link(i, sw, 1e11, 1e-6, "nvswitch");
  return std::move(t).Build().value();
}

}  // namespace devplace::testing

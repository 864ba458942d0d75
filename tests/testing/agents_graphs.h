// Small graphs and machines with known best placements, shared by the agents tests.
#pragma once

#include <string>

#include "core/graph.h"
#include "core/topology.h"
#include "core/training_graph.h"

namespace devplace::testing {

// `prefix` followed by `index` (appending avoids GCC 12's false -Wrestrict on "literal" + std::string).
inline std::string Label(std::string prefix, int index) {
  prefix += std::to_string(index);
  return prefix;
}

// `chains` independent chains of `length` matmuls [64 x width] x [width x width], as a training graph. Each op
// has its own layer "c<chain>/l<i>".
inline Graph IndependentChains(int chains, int length, int64_t width = 1024) {
  GraphBuilder b("chains");
  for (int c = 0; c < chains; ++c) {
    OpId prev = -1;
    for (int i = 0; i < length; ++i) {
      Op op{.name = Label(Label("c", c) + "_", i), .type = "matmul",
            .layer = Label(Label("c", c) + "/l", i), .shape = {64, width}};
      op.flops = 2.0 * 64 * width * width;
      op.param_bytes = width * width * 4;
      op.dims = {PartitionDim{DimKind::kSample, 0, 0, 64}, PartitionDim{DimKind::kParameter, 1, -1, width}};
      OpId id = b.add_op(op);
      if (prev >= 0) b.add_edge(prev, id);
      prev = id;
    }
  }
  return DeriveTrainingGraph(std::move(b).Build().value()).value();
}

// `devices` identical GPUs with `memory_gib` each, behind one PCIe switch.
inline Topology Gpus(int devices, double memory_gib = 16) {
  TopologyBuilder b("gpus");
  for (int d = 0; d < devices; ++d)
    b.add_device(Device{.name = Label("gpu", d), .kind = "v100", .host = "h", .peak_flops_f32 = 15.7e12,
                        .memory_bandwidth = 900e9,
                        .memory_bytes = static_cast<int64_t>(memory_gib * 1024 * 1024 * 1024)});
  NodeId sw = b.add_switch(Switch{"pcie", "h"});
  for (int d = 0; d < devices; ++d) b.add_bidirectional_link(d, sw, 12e9, 1.5e-6, "pcie");
  return std::move(b).Build().value();
}

}  // namespace devplace::testing

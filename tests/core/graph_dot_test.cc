#include "core/graph_dot.h"

#include <gtest/gtest.h>

#include <string>

#include "core/topology_yaml.h"

namespace devplace {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// a -> b -> c in layer "l1" (b and its "grad" colocated), d in layer "l2" fed by c and splittable along its
// sample dimension; a's name needs quoting.
Graph SmallGraph() {
  GraphBuilder b("small");
  auto op = [](std::string name, std::string layer, std::string group, OpRole role = OpRole::kForward) {
    Op o;
    o.name = std::move(name);
    o.type = "matmul";
    o.layer = std::move(layer);
    o.colocation = std::move(group);
    o.role = role;
    o.shape = {4, 8};
    o.flops = 100;
    return o;
  };
  OpId a = b.add_op(op("a\"q", "l1", ""));
  OpId bb = b.add_op(op("b", "l1", "g"));
  OpId c = b.add_op(op("c", "l1", ""));
  Op d_op = op("d", "l2", "");
  d_op.dims = {PartitionDim{.kind = DimKind::kSample, .output_axis = 0, .input_axis = 0, .size = 4}};
  OpId d = b.add_op(d_op);
  OpId grad = b.add_op(op("b_grad", "l1", "g", OpRole::kBackward));
  b.add_edge(a, bb);
  b.add_edge(bb, c);
  b.add_edge(c, d, 1000);
  b.add_edge(c, grad);
  Expected<Graph> g = std::move(b).Build();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return std::move(g).value();
}

Topology TwoDevices() {
  return TopologyFromYaml(R"(
name: two
devices:
  - {name: g0, kind: v100, host: h, peak_tflops: 15, memory_bandwidth_gbs: 900, memory_gib: 16}
  - {name: g1, kind: v100, host: h, peak_tflops: 15, memory_bandwidth_gbs: 900, memory_gib: 16}
links:
  - {between: [g0, g1], bandwidth_gbs: 25, latency_us: 2, kind: nvlink}
)", "two.yaml").value();
}

TEST(GraphDot, DrawsEveryOpEdgeAndColocationCluster) {
  const Graph g = SmallGraph();
  const std::string dot = GraphToDot(g).value();
  EXPECT_EQ(dot.rfind("digraph \"small\" {", 0), 0u);
  EXPECT_EQ(Count(dot, "[label=\""), g.num_ops() + g.num_edges());
  EXPECT_EQ(Count(dot, " -> "), g.num_edges());
  EXPECT_EQ(Count(dot, "subgraph cluster_group"), 1);  // only "g" has two members
  EXPECT_NE(dot.find("label=\"g\""), std::string::npos);
  EXPECT_NE(dot.find("\"a\\\"q\\nmatmul\""), std::string::npos);  // quotes escaped
  EXPECT_NE(dot.find("style=\"dashed\""), std::string::npos);     // the backward op
  EXPECT_EQ(dot.find("fillcolor"), std::string::npos);            // no strategy: no colours
  EXPECT_EQ(dot.back(), '\n');
}

TEST(GraphDot, ColoursByDeviceWithALegend) {
  const Graph g = SmallGraph();
  const Topology t = TwoDevices();
  Strategy s = Strategy::FromPlacement({0, 1, 0, 0, 1});
  const std::string dot = GraphToDot(g, &t, &s).value();
  EXPECT_EQ(Count(dot, "fillcolor=\"#8dd3c7\""), 3 + 1);  // three ops on g0, plus its legend entry
  EXPECT_EQ(Count(dot, "fillcolor=\"#ffffb3\""), 2 + 1);
  EXPECT_NE(dot.find("style=\"filled,dashed\""), std::string::npos);
  EXPECT_NE(dot.find("label=\"g1\""), std::string::npos);
  EXPECT_FALSE(GraphToDot(g, nullptr, &s).ok());  // a strategy needs its topology

  s.configs[3] = *SplitConfig(g.op(3), {1, 0});  // d split over both devices: striped
  EXPECT_NE(GraphToDot(g, &t, &s).value().find("style=\"striped\", fillcolor=\"#ffffb3:#8dd3c7\""),
            std::string::npos);
  s.configs[3] = {.devices = {7}, .degrees = {}};  // a strategy that does not fit is refused with its message
  const Expected<std::string> bad = GraphToDot(g, &t, &s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("device 7"), std::string::npos) << bad.error().message;
}

TEST(GraphDot, CollapsesLargeGraphsByLayer) {
  const Graph g = SmallGraph();
  const Topology t = TwoDevices();
  const Strategy s = Strategy::FromPlacement({1, 1, 0, 0, 1});
  const std::string dot = GraphToDot(g, &t, &s, {.max_ops = 3}).value();
  EXPECT_EQ(Count(dot, "  layer"), 2 + 1);  // two layer nodes, one edge line starting with "layer"
  EXPECT_NE(dot.find("\"l1\\n4 ops, 400 FLOPs\""), std::string::npos);
  EXPECT_NE(dot.find("layer0 -> layer1 [label=\""), std::string::npos);
  EXPECT_EQ(Count(dot, " -> "), 1);
  // l1's FLOPs run mostly on g1 (three of four ops); l2 runs on g0.
  EXPECT_NE(dot.find("layer0 [label=\"l1\\n4 ops, 400 FLOPs\", style=\"filled\", fillcolor=\"#ffffb3\"]"),
            std::string::npos);
  EXPECT_EQ(GraphToDot(g, nullptr, nullptr, {.max_ops = 0}).value(), GraphToDot(g).value());
}

}  // namespace
}  // namespace devplace

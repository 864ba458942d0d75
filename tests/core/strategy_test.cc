#include "core/strategy.h"

#include <gtest/gtest.h>

namespace devplace {
namespace {

struct Fixture {
  Graph graph;
  Topology topology;
};

Fixture Make() {
  GraphBuilder g("g");
  Op a{.name = "a", .type = "matmul", .shape = {8, 4}, .flops = 1, .colocation = "grp"};
  a.dims = {PartitionDim{DimKind::kSample, 0, 0, 8}, PartitionDim{DimKind::kParameter, 1, -1, 4}};
  Op b{.name = "b", .type = "relu", .shape = {8, 4}, .flops = 1, .colocation = "grp"};
  Op c{.name = "c", .type = "relu", .shape = {8, 4}, .flops = 1};
  g.add_op(a);
  g.add_op(b);
  g.add_op(c);
  TopologyBuilder t("two");
  Device d{.name = "d0", .kind = "cpu", .peak_flops_f32 = 1e9, .memory_bandwidth = 1e9, .memory_bytes = 1 << 30};
  t.add_device(d);
  d.name = "d1";
  t.add_device(d);
  t.add_bidirectional_link(0, 1, 1e9, 0, "memcpy");
  return {std::move(g).Build().value(), std::move(t).Build().value()};
}

std::string Validate(const Strategy& s, const Fixture& f) {
  Status st = ValidateStrategy(s, f.graph, f.topology);
  return st.ok() ? "" : st.error().message;
}

TEST(Strategy, PlainPlacementsAndPartitionedConfigsValidate) {
  Fixture f = Make();
  Strategy s = Strategy::FromPlacement({1, 1, 0});
  EXPECT_TRUE(s.is_plain_placement());
  EXPECT_EQ(Validate(s, f), "");
  s.configs[0] = OpConfig{{0, 1}, {2, 1}};
  s.configs[1] = OpConfig{{0, 1}, {}};  // one part, copied on both devices
  EXPECT_FALSE(s.is_plain_placement());
  EXPECT_EQ(Validate(s, f), "");
  s.configs[0] = OpConfig{{1, 0}, {2, 1}};  // the same devices in another order: still colocated
  EXPECT_EQ(Validate(s, f), "");
  s.configs[1] = OpConfig{{0}, {}};
  EXPECT_EQ(Validate(s, f), "op 'b': is in colocation group 'grp' with 'a' but placed differently");
}

TEST(Strategy, RejectsMismatchesWithClearMessages) {
  Fixture f = Make();
  EXPECT_EQ(Validate(Strategy::AllOn(2, 0), f), "strategy has 2 op configs but graph 'g' has 3 ops");
  EXPECT_EQ(Validate(Strategy::FromPlacement({0, 0, 7}), f), "op 'c': device 7 is not in topology 'two' (2 devices)");
  EXPECT_EQ(Validate(Strategy::FromPlacement({0, 1, 0}), f),
            "op 'b': is in colocation group 'grp' with 'a' but placed differently");
  Strategy s = Strategy::AllOn(3, 0);
  s.configs[0] = OpConfig{{0, 1}, {2, 2}};
  EXPECT_EQ(Validate(s, f),
            "op 'a': partition degrees multiply to 4 parts but 2 devices are given (not a whole number of copies)");
  s.configs[0] = OpConfig{{0, 1}, {2}};
  EXPECT_EQ(Validate(s, f), "op 'a': has 1 partition degrees but 2 partitionable dimensions");
  s.configs[0] = OpConfig{{0, 0}, {2, 1}};
  EXPECT_EQ(Validate(s, f), "op 'a': device 'd0' is listed twice");
}

}  // namespace
}  // namespace devplace

// Unit communication tasks of cross-mesh resharding, Alpa's spec notation and meshes at an offset (core/reshard.h).
#include "core/reshard.h"

#include <gtest/gtest.h>

#include "core/reshard_suite.h"
#include "tests/core/sharding_graphs.h"

namespace devplace {
namespace {

using testing::Gpus;

Mesh At(const char* text, const Topology& t) {
  Expected<Mesh> m = MeshAt(text, t, text);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return *m;
}

ShardingSpec Spec(const char* text, const Mesh& mesh) {
  Expected<ShardingSpec> s = ParseAlpaSpec(text, mesh);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return *s;
}

TEST(Reshard, MeshAtOffsetsDevices) {
  const Topology t = Gpus(8);
  EXPECT_EQ(At("1x4@4", t).devices, (std::vector<DeviceId>{4, 5, 6, 7}));
  EXPECT_EQ(At("2x2", t).devices, (std::vector<DeviceId>{0, 1, 2, 3}));
  EXPECT_FALSE(MeshAt("1x4@5", t, "m").ok());
  EXPECT_FALSE(MeshAt("1x4@x", t, "m").ok());
  EXPECT_EQ(MeshAt("4x4@0", t, "m").error().message, "mesh '4x4': needs 16 devices but topology '" + t.name() + "' has 8");
}

TEST(Reshard, AlpaNotationRoundTrips) {
  const Topology t = Gpus(8);
  const Mesh m = At("2x4", t);
  const ShardingSpec s = Spec("S0,R,S1", m);
  EXPECT_EQ(s.dims, (std::vector<std::vector<int32_t>>{{0}, {}, {1}}));
  EXPECT_EQ(AlpaSpecText(s), "S0,R,S1");
  EXPECT_EQ(Spec("S01,R", m).dims, (std::vector<std::vector<int32_t>>{{0, 1}, {}}));
  Expected<ShardingSpec> bad = ParseAlpaSpec("S0,S2", m);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("entry 1 'S2'"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(ParseAlpaSpec("S0,X", m).ok());
}

TEST(Reshard, UnitTasksIntersectTiles) {
  const Topology t = Gpus(8);
  const Mesh src = At("1x4", t), dst = At("1x2@4", t);
  // Rows over 4 source devices, columns over 2 destination devices: 4 x 2 slices, one holder and receiver each.
  Expected<std::vector<UnitTask>> tasks = UnitTasks({8, 4}, 4, src, Spec("S1,R", src), dst, Spec("R,S1", dst));
  ASSERT_TRUE(tasks.ok()) << tasks.error().message;
  ASSERT_EQ(tasks->size(), 8u);
  const UnitTask& last = tasks->back();
  EXPECT_EQ(last.lo, (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(last.hi, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(last.bytes, 2 * 2 * 4);
  EXPECT_EQ(last.senders, (std::vector<DeviceId>{3}));
  EXPECT_EQ(last.receivers, (std::vector<DeviceId>{5}));
  int64_t total = 0;
  for (const UnitTask& u : *tasks) total += u.bytes;
  EXPECT_EQ(total, 8 * 4 * 4);
}

TEST(Reshard, ReplicatedLayoutsAreOneTaskAndHoldersAreNotReceivers) {
  const Topology t = Gpus(8);
  const Mesh src = At("1x4", t), dst = At("2x2@4", t);
  Expected<std::vector<UnitTask>> tasks = UnitTasks({16, 16}, 2, src, Spec("R,R", src), dst, Spec("R,R", dst));
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].senders, (std::vector<DeviceId>{0, 1, 2, 3}));
  EXPECT_EQ((*tasks)[0].receivers, (std::vector<DeviceId>{4, 5, 6, 7}));
  // Overlapping meshes: a device that holds a slice does not receive it; the same layout moves nothing.
  Expected<std::vector<UnitTask>> same = UnitTasks({16, 16}, 2, src, Spec("S1,R", src), src, Spec("S1,R", src));
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->empty());
  // Bad specs: an unknown axis, a partial sum.
  EXPECT_FALSE(UnitTasks({16}, 2, src, Spec("S1", src), dst, ShardingSpec{{{5}}, {}}).ok());
  EXPECT_FALSE(UnitTasks({16}, 2, src, ShardingSpec{{{}}, {1}}, dst, Spec("R", dst)).ok());
}

TEST(Reshard, SuitesReadAndNameBadFields) {
  Expected<ReshardSuite> s = ReshardSuiteFromYaml(
      "elem_bytes: 2\ncases:\n  - {name: a, src_mesh: 1x4@0, src_spec: \"S1,R\", dst_mesh: 1x4@4, dst_spec: \"R,S1\","
      " shape: [8, 8]}\n",
      "s.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->elem_bytes, 2);
  ASSERT_EQ(s->cases.size(), 1u);
  EXPECT_EQ(s->cases[0].src_spec, "S1,R");
  EXPECT_EQ(s->cases[0].shape, (std::vector<int64_t>{8, 8}));
  Expected<ReshardSuite> bad = ReshardSuiteFromYaml(
      "cases:\n  - {name: a, src_mesh: 1x4, src_spec: R, dst_mesh: 1x4@4, dst_spec: R, shape: [0]}\n", "s.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("s.yaml: cases[0].shape[0]"), std::string::npos) << bad.error().message;
  Expected<ReshardSuite> twice = ReshardSuiteFromYaml(
      "cases:\n  - {name: a, src_mesh: m, src_spec: R, dst_mesh: m, dst_spec: R, shape: [1]}\n"
      "  - {name: a, src_mesh: m, src_spec: R, dst_mesh: m, dst_spec: R, shape: [1]}\n",
      "s.yaml");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("cases[1].name"), std::string::npos) << twice.error().message;
  EXPECT_FALSE(ReshardSuiteFromYaml("cases: []\n", "s.yaml").ok());
  EXPECT_FALSE(ReshardSuiteFromYaml("cases:\n  - {name: a, src_mesh: m, src_spec: R, dst_mesh: m, dst_spec: R, "
                                    "shape: [1], extra: 1}\n", "s.yaml").ok());
}

}  // namespace
}  // namespace devplace

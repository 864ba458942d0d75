#include "core/mesh.h"

#include <gtest/gtest.h>

#include "core/topology_yaml.h"
#include "tests/core/sharding_graphs.h"

namespace devplace {
namespace {

using testing::Gpus;

std::string Message(const Status& st) { return st.ok() ? "" : st.error().message; }

TEST(Mesh, ShorthandLaysDevicesOutRowMajor) {
  const Topology t = Gpus(8);
  Expected<Mesh> m = MeshFromShorthand("2x4", {}, t);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->axes, (std::vector<std::string>{"data", "model"}));
  EXPECT_EQ(m->size(), 8);
  EXPECT_EQ(m->device_at({1, 2}), 6);
  EXPECT_EQ(m->coords_of(6), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(m->find_axis("model"), 1);
  EXPECT_EQ(m->find_axis("pipe"), -1);
  Expected<Mesh> cube = MeshFromShorthand("2x2x2", {}, t);
  ASSERT_TRUE(cube.ok());
  EXPECT_EQ(cube->axes, (std::vector<std::string>{"a0", "a1", "a2"}));
  Expected<Mesh> half = MeshFromShorthand("4", {"model"}, t);  // a submachine: the first four devices
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->devices, (std::vector<DeviceId>{0, 1, 2, 3}));
}

TEST(Mesh, ShorthandErrorsSayWhatIsWrong) {
  const Topology t = Gpus(8);
  EXPECT_EQ(MeshFromShorthand("2x", {}, t).error().message, "mesh '2x': expected extents >= 1 separated by 'x', e.g. 2x4");
  EXPECT_EQ(MeshFromShorthand("0x4", {}, t).error().message,
            "mesh '0x4': expected extents >= 1 separated by 'x', e.g. 2x4");
  EXPECT_EQ(MeshFromShorthand("4x4", {}, t).error().message, "mesh '4x4': needs 16 devices but topology 'gpus8' has 8");
  // A product past int64 saturates instead of wrapping around (no huge or negative device count).
  EXPECT_EQ(MeshFromShorthand("65536x65536x65536x65535", {}, t).error().message,
            "mesh '65536x65536x65536x65535': needs 9223372036854775807 devices but topology 'gpus8' has 8");
  EXPECT_EQ(MeshFromShorthand("2x4", {"data"}, t).error().message, "mesh '2x4': has 2 axes but 1 axis names are given");
  EXPECT_EQ(MeshFromShorthand("2x4", {"x", "x"}, t).error().message, "mesh 'mesh': axes: axis 'x' is named twice");
}

TEST(Mesh, ValidationNamesTheField) {
  const Topology t = Gpus(8);
  Mesh m{"m", {2, 2}, {"data", "model"}, {0, 1, 2}};
  EXPECT_EQ(Message(ValidateMesh(m, t)), "mesh 'm': devices: shape [2, 2] has 4 positions but 3 devices are given");
  m.devices = {0, 1, 2, 1};
  EXPECT_EQ(Message(ValidateMesh(m, t)), "mesh 'm': devices: device 'gpu1' appears twice");
  m.devices = {0, 1, 2, 9};
  EXPECT_EQ(Message(ValidateMesh(m, t)), "mesh 'm': devices: device 9 is not in topology 'gpus8'");
  m.devices = {0, 1, 2, 3};
  m.axes = {"data"};
  EXPECT_EQ(Message(ValidateMesh(m, t)), "mesh 'm': axes: names 1 axes but the shape has 2");
  m.axes = {"data", "model"};
  EXPECT_EQ(Message(ValidateMesh(m, t)), "");
}

TEST(Mesh, SlicesKeepTheLayout) {
  const Topology t = Gpus(8);
  const Mesh m = MeshFromShorthand("2x4", {}, t).value();
  Expected<Mesh> right = SliceMesh(m, "model", 2, 4, "right");
  ASSERT_TRUE(right.ok());
  EXPECT_EQ(right->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(right->devices, (std::vector<DeviceId>{2, 3, 6, 7}));
  Expected<Mesh> second = SliceMesh(m, "data", 1, 2, "second");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->devices, (std::vector<DeviceId>{4, 5, 6, 7}));
  EXPECT_EQ(Message(ValidateMesh(*right, t)), "");
  EXPECT_EQ(SliceMesh(m, "pipe", 0, 1, "x").error().message, "mesh 'mesh' has no axis 'pipe'");
  EXPECT_FALSE(SliceMesh(m, "model", 3, 3, "x").ok());
  EXPECT_FALSE(SliceMesh(m, "model", 2, 5, "x").ok());
}

constexpr const char* kMachine = R"(name: box
devices:
  - {name: "gpu{i}", count: 8, kind: v100, peak_tflops: 15.7, memory_bandwidth_gbs: 900, memory_gib: 16}
switches:
  - {name: sw}
links:
  - {hub: sw, nodes: [gpu0, gpu1, gpu2, gpu3, gpu4, gpu5, gpu6, gpu7], bandwidth_gbs: 100, latency_us: 1, kind: nvswitch}
)";

TEST(Mesh, TopologyFilesDeclareMeshes) {
  const std::string text = std::string(kMachine) +
                           "meshes:\n"
                           "  - {name: m24, shape: [2, 4], axes: [data, model]}\n"
                           "  - {name: rev, shape: [4], axes: [model], devices: [gpu7, gpu6, gpu5, gpu4]}\n";
  Expected<Topology> t = TopologyFromYaml(text, "t.yaml");
  ASSERT_TRUE(t.ok()) << t.error().message;
  Expected<std::vector<Mesh>> meshes = MeshesFromYaml(text, "t.yaml", *t);
  ASSERT_TRUE(meshes.ok()) << meshes.error().message;
  ASSERT_EQ(meshes->size(), 2u);
  EXPECT_EQ((*meshes)[0].devices, (std::vector<DeviceId>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ((*meshes)[1].devices, (std::vector<DeviceId>{7, 6, 5, 4}));
  Expected<std::vector<Mesh>> none = MeshesFromYaml(kMachine, "t.yaml", *t);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(Mesh, BadMeshesInTopologyFilesNameFileAndField) {
  auto error = [](const std::string& meshes) {
    Expected<Topology> t = TopologyFromYaml(std::string(kMachine) + "meshes:\n" + meshes, "t.yaml");
    return t.ok() ? std::string("accepted") : t.error().message;
  };
  EXPECT_EQ(error("  - {name: m, shape: [3, 4], axes: [data, model]}\n"),
            "t.yaml: meshes[0].shape: [3, 4] needs 12 devices but topology 'box' has 8");
  EXPECT_EQ(error("  - {name: m, shape: [2, 2], axes: [data, model], devices: [gpu0, gpu1, gpu2]}\n"),
            "t.yaml: meshes[0].devices: shape [2, 2] has 4 positions but 3 devices are given");
  EXPECT_EQ(error("  - {name: m, shape: [2], axes: [data], devices: [gpu0, gpu0]}\n"),
            "t.yaml: meshes[0].devices: device 'gpu0' appears twice");
  EXPECT_EQ(error("  - {name: m, shape: [2], axes: [data], devices: [gpu0, gpu9]}\n"),
            "t.yaml: meshes[0].devices[1]: unknown device 'gpu9' (topology 'box')");
  EXPECT_EQ(error("  - {name: m, shape: [2, 4], axes: [data, data]}\n"),
            "t.yaml: meshes[0].axes: axis 'data' is named twice");
  EXPECT_EQ(error("  - {name: m, shape: [8], axes: [data]}\n  - {name: m, shape: [8], axes: [model]}\n"),
            "t.yaml: meshes[1].name: duplicate mesh name 'm'");
  EXPECT_EQ(error("  - {shape: [8], axes: [data]}\n"), "t.yaml: meshes[0].name: missing required field");
}

}  // namespace
}  // namespace devplace

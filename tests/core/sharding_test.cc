#include "core/sharding.h"

#include <random>

#include <gtest/gtest.h>

#include "core/atomic_file.h"
#include "core/sharding_io.h"
#include "core/strategy_json.h"
#include "core/topology_yaml.h"
#include "tests/core/sharding_graphs.h"

namespace devplace {
namespace {

using testing::Gpus;
using testing::MlpBlock;

ShardingSpec Spec(std::vector<std::vector<int32_t>> dims, std::vector<int32_t> partial = {}) {
  return ShardingSpec{std::move(dims), std::move(partial)};
}

TEST(Sharding, LowersColumnAndRowParallelMatmulsOnA2x4Mesh) {
  const Graph g = MlpBlock(false);
  const Mesh m = MeshFromShorthand("2x4", {}, Gpus(8)).value();  // data = 0, model = 1
  const Op& ffn1 = g.op(g.find("ffn1"));  // dims: sample, attribute, parameter (out axis 2), reduction
  Expected<OpConfig> column = LowerSpec(ffn1, Spec({{0}, {}, {1}}), m);
  ASSERT_TRUE(column.ok()) << column.error().message;
  EXPECT_EQ(column->degrees, (std::vector<int32_t>{2, 1, 4, 1}));
  EXPECT_EQ(column->devices, (std::vector<DeviceId>{0, 1, 2, 3, 4, 5, 6, 7}));
  Expected<OpConfig> row = LowerSpec(g.op(g.find("ffn2")), Spec({{0}, {}, {}}, {1}), m);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->degrees, (std::vector<int32_t>{2, 1, 1, 4}));
  // Model-major order: part p = (model, data) row-major, so devices run down the data axis first.
  Expected<OpConfig> swapped = LowerSpec(ffn1, Spec({{}, {}, {1, 0}}), m);
  ASSERT_TRUE(swapped.ok());
  EXPECT_EQ(swapped->degrees, (std::vector<int32_t>{1, 1, 8, 1}));
  EXPECT_EQ(swapped->devices, (std::vector<DeviceId>{0, 4, 1, 5, 2, 6, 3, 7}));
  // Replicated over the model axis: the 2 data parts copied on every model slice (copy c on devices[2c], [2c + 1]).
  Expected<OpConfig> data_only = LowerSpec(g.op(g.find("ln")), Spec({{0}, {}, {}}), m);
  ASSERT_TRUE(data_only.ok());
  EXPECT_EQ(data_only->devices, (std::vector<DeviceId>{0, 4, 1, 5, 2, 6, 3, 7}));
  Expected<OpConfig> none = LowerSpec(g.op(g.find("ln")), ShardingSpec::Replicated(3), m);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, (OpConfig{{0, 1, 2, 3, 4, 5, 6, 7}, {}}));
  EXPECT_EQ(FormatSpec(Spec({{0}, {}, {}}, {1}), m), "[data, -, -] partial(model)");
  EXPECT_EQ(FormatSpec(Spec({{1, 0}}), m), "[(model, data)]");
}

TEST(Sharding, RejectsSpecsThatDoNotFit) {
  const Graph g = MlpBlock(false);
  const Mesh m = MeshFromShorthand("2x4", {}, Gpus(8)).value();
  const Op& ln = g.op(g.find("ln"));
  EXPECT_EQ(LowerSpec(ln, Spec({{0}, {}}), m).error().message, "op 'ln': spec has 2 dims but the tensor has rank 3 (shape [8, 4, 16])");
  EXPECT_EQ(LowerSpec(ln, Spec({{0}, {0}, {}}), m).error().message, "op 'ln': mesh axis 'data' is used twice");
  EXPECT_EQ(LowerSpec(ln, Spec({{0}, {}, {1}}), m).error().message,
            "op 'ln' (layer_norm) cannot split its output axis 2 (no partitionable dimension slices it)");
  EXPECT_EQ(LowerSpec(ln, Spec({{}, {}, {}}, {1}), m).error().message,
            "op 'ln' (layer_norm) has no reduction dimension to be partial over");
  const Mesh m3 = MeshFromShorthand("3", {}, Gpus(8)).value();
  Status st = ValidateSpec(Spec({{0}, {}, {}}), ln.shape, m3, /*allow_padding=*/false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "axis 0 (extent 8) is not divisible by 3 shards (set pad: true to allow uneven shards)");
  EXPECT_TRUE(ValidateSpec(Spec({{0}, {}, {}}), ln.shape, m3, /*allow_padding=*/true).ok());
}

// Every spec a random assignment of mesh axes to an op's expressible dims gives lowers to a config that lifts back
// to the same spec; configs that no spec gives do not lift.
TEST(Sharding, LoweringThenLiftingRoundTrips) {
  const Graph g = MlpBlock(true);
  const Topology t = Gpus(8);
  std::mt19937 rng(17);
  int checked = 0;
  for (const char* shape : {"8", "2x4", "2x2x2", "4x2"}) {
    const Mesh m = MeshFromShorthand(shape, {}, t).value();
    for (const Op& op : g.ops()) {
      for (int trial = 0; trial < 20; ++trial) {
        ShardingSpec spec = ShardingSpec::Replicated(static_cast<int32_t>(op.shape.size()));
        const bool has_reduction = op.type == "matmul" || op.type == "matmul_grad";
        for (int32_t a = 0; a < m.rank(); ++a) {
          const int slot = std::uniform_int_distribution<int>(-1, static_cast<int>(op.shape.size()))(rng);
          if (slot == static_cast<int>(op.shape.size())) {
            if (has_reduction) spec.partial.push_back(a);
          } else if (slot >= 0) {
            spec.dims[slot].push_back(a);
          }
        }
        Expected<OpConfig> c = LowerSpec(op, spec, m);
        if (!c.ok()) continue;  // an axis without a dimension, or too many shards
        std::optional<ShardingSpec> back = LiftConfig(op, *c, m);
        ASSERT_TRUE(back.has_value()) << op.name << " " << FormatSpec(spec, m);
        EXPECT_EQ(*back, spec) << op.name << " on " << shape << ": " << FormatSpec(spec, m) << " came back as "
                               << FormatSpec(*back, m);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500);
  const Mesh m = MeshFromShorthand("2x4", {}, t).value();
  const Op& ffn1 = g.op(g.find("ffn1"));
  EXPECT_FALSE(LiftConfig(ffn1, OpConfig{{5}, {}}, m).has_value());                       // not copied over the mesh
  EXPECT_FALSE(LiftConfig(ffn1, OpConfig{{0}, {}}, m).has_value());                       // one copy only
  EXPECT_FALSE(LiftConfig(ffn1, OpConfig{{0, 2}, {2, 1, 1, 1}}, m).has_value());          // not a mesh slice
  EXPECT_FALSE(LiftConfig(ffn1, OpConfig{{1, 0, 2, 3}, {1, 1, 4, 1}}, m).has_value());    // not in mesh order
  EXPECT_EQ(LiftConfig(ffn1, OpConfig{{0, 1, 2, 3, 4, 5, 6, 7}, {}}, m), ShardingSpec::Replicated(3));
  EXPECT_EQ(LiftConfig(ffn1, OpConfig{{0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 1, 1}}, m), ShardingSpec::Replicated(3));
}

// An op replicated over a mesh axis runs on every device of it: the axes a spec leaves unused index the copies.
TEST(Sharding, ReplicatedAxesLowerToCopies) {
  const Graph g = MlpBlock(true);
  const Mesh m = MeshFromShorthand("2x4", {}, Gpus(8)).value();
  const Op& ffn1 = g.op(g.find("ffn1"));
  // Split over data only: 2 parts, each copied over the 4 model positions (copy c of part p on devices[c * 2 + p]).
  EXPECT_EQ(LowerSpec(ffn1, Spec({{0}, {}, {}}), m).value(), (OpConfig{{0, 4, 1, 5, 2, 6, 3, 7}, {2, 1, 1, 1}}));
  // Split over model only: 4 parts copied over the 2 data positions.
  EXPECT_EQ(LowerSpec(ffn1, Spec({{}, {}, {1}}), m).value(), (OpConfig{{0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 4, 1}}));
  EXPECT_EQ(LowerSpec(ffn1, Spec({{}, {}, {}}), m).value(), (OpConfig{{0, 1, 2, 3, 4, 5, 6, 7}, {}}));
}

TEST(Sharding, ReshardingStepsNameTheCollectives) {
  using K = ReshardKind;
  const ShardingSpec partial = Spec({{0}, {}, {}}, {1});
  EXPECT_EQ(ReshardingSteps(partial, Spec({{0}, {}, {}})), (std::vector<ReshardStep>{{K::kAllReduce, 1, -1, -1}}));
  EXPECT_EQ(ReshardingSteps(partial, Spec({{0}, {}, {1}})), (std::vector<ReshardStep>{{K::kReduceScatter, 1, -1, 2}}));
  EXPECT_EQ(ReshardingSteps(Spec({{0}, {}, {1}}), Spec({{0}, {}, {}})),
            (std::vector<ReshardStep>{{K::kAllGather, 1, 2, -1}}));
  EXPECT_EQ(ReshardingSteps(Spec({{0}, {}, {1}}), Spec({{0}, {1}, {}})),
            (std::vector<ReshardStep>{{K::kAllToAll, 1, 2, 1}}));
  EXPECT_EQ(ReshardingSteps(Spec({{0}, {}, {}}), Spec({{0}, {}, {1}})), (std::vector<ReshardStep>{{K::kSlice, 1, -1, 2}}));
  EXPECT_EQ(ReshardingSteps(Spec({{0, 1}}), Spec({{1, 0}})),
            (std::vector<ReshardStep>{{K::kAllToAll, 0, 0, 0}, {K::kAllToAll, 1, 0, 0}}));
  EXPECT_TRUE(ReshardingSteps(Spec({{0}, {}, {1}}), Spec({{0}, {}, {1}})).empty());
  EXPECT_EQ(ToString(K::kReduceScatter), "reduce-scatter");

  // What the ops of the Megatron MLP read: ffn2 (row-parallel) reads act split like act is written; the residual
  // reads ffn2's pending sum whole, an all-reduce over the model axis.
  const Graph g = MlpBlock(false);
  const Op& ffn2 = g.op(g.find("ffn2"));
  EXPECT_EQ(InputSpecFor(ffn2, partial, g.op(g.find("act"))), Spec({{0}, {}, {1}}));
  EXPECT_EQ(InputSpecFor(g.op(g.find("res")), Spec({{0}, {}, {}}), ffn2), Spec({{0}, {}, {}}));
  EXPECT_EQ(InputSpecFor(g.op(g.find("loss")), Spec({{0}}), g.op(g.find("labels"))), Spec({{0}, {}}));
}

TEST(Sharding, StrategyJsonCarriesSpecsAndReadsBothForms) {
  const Graph g = MlpBlock(false);
  const Topology t = Gpus(8);
  const Mesh m = MeshFromShorthand("2x4", {}, t).value();
  std::vector<ShardingSpec> specs;
  for (const Op& op : g.ops()) specs.push_back(ShardingSpec::Replicated(static_cast<int32_t>(op.shape.size())));
  specs[g.find("x")].dims[0] = {0};
  specs[g.find("ffn1")] = Spec({{0}, {}, {1}});
  specs[g.find("ffn2")] = Spec({{0}, {}, {}}, {1});
  Expected<Strategy> s = LowerSpecs(g, specs, m);
  ASSERT_TRUE(s.ok()) << s.error().message;
  s->configs[g.find("loss")] = OpConfig{{3}, {}};  // no spec on the mesh describes this one
  const std::string text = ShardedStrategyToJson(*s, g, t, m);
  EXPECT_NE(text.find("\"partial\""), std::string::npos);
  EXPECT_NE(text.find("\"gpu3\""), std::string::npos);
  Expected<Strategy> back = StrategyFromJson(text, "s.json", g, t);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, *s);
  Expected<Strategy> plain = StrategyFromJson(StrategyToJson(*s, g, t), "p.json", g, t);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, *s);
  // ZeRO-3's shard_weights travels in both forms, and only ops holding weights may carry it.
  Strategy z3 = *s;
  ASSERT_GE(g.find("ffn2"), 0);
  z3.configs[g.find("ffn1")].shard_weights = true;
  z3.configs[g.find("ffn2")].shard_weights = true;
  EXPECT_EQ(StrategyFromJson(ShardedStrategyToJson(z3, g, t, m), "s.json", g, t).value(), z3);
  EXPECT_EQ(StrategyFromJson(StrategyToJson(z3, g, t), "p.json", g, t).value(), z3);
  z3.configs[g.find("loss")].shard_weights = true;
  EXPECT_EQ(StrategyFromJson(StrategyToJson(z3, g, t), "p.json", g, t).error().message,
            "p.json: op 'loss': shard_weights is set but the op is neither a forward op with weights nor the backward "
            "op of one");

  auto error = [&](const std::string& from, const std::string& to) {  // replaces the first `from` after ffn1's name
    std::string bad = text;
    const size_t at = bad.find(from, bad.find("\"ffn1\""));
    EXPECT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    Expected<Strategy> r = StrategyFromJson(bad, "s.json", g, t);
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  const OpId ffn1 = g.find("ffn1");
  EXPECT_EQ(error("\"model\"", "\"modle\""),
            "s.json: ops[" + std::to_string(ffn1) + "].spec[2]: unknown mesh axis 'modle' (mesh 'mesh' has data, model)");
  EXPECT_EQ(error("\"model\"", "\"data\""),
            "s.json: ops[" + std::to_string(ffn1) + "].spec[2]: mesh axis 'data' is used twice in one spec");
  std::string no_mesh = text;
  no_mesh.replace(no_mesh.find("\"mesh\": {"), 9, "\"nomesh\": {");
  EXPECT_EQ(StrategyFromJson(no_mesh, "s.json", g, t).error().message,
            "s.json: ops[0].spec: ops given by spec need a top-level mesh");
}

// A spec's mesh without `devices` (and --mesh) is laid out over the machine's fast links (core/mesh_layout.h); a
// `devices` list stays exactly as written, and so do the meshes a topology file lists devices for.
TEST(Sharding, DefaultMeshesFollowTheFastLinks) {
  const std::string dgx1_file = DEVPLACE_SOURCE_DIR "/configs/topologies/dgx1-v100.yaml";
  const Topology dgx1 = ReadTopologyFile(dgx1_file).value();
  auto shipped = [&](const std::string& spec, const std::string& shape = "") {
    Expected<ShardingRequest> r =
        ReadShardingRequestFile(DEVPLACE_SOURCE_DIR "/configs/sharding/" + spec, dgx1, {}, shape);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->mesh.devices : std::vector<DeviceId>{};
  };
  // The all-NVLink ring (id order's 3 -> 4 and 7 -> 0 cross PCIe and QPI).
  EXPECT_EQ(shipped("data-parallel.yaml"), (std::vector<DeviceId>{0, 1, 2, 3, 7, 5, 6, 4}));
  EXPECT_EQ(shipped("data-model-2x4.yaml"), (std::vector<DeviceId>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(shipped("data-model-2x4.yaml", "4x2"), (std::vector<DeviceId>{0, 1, 3, 2, 7, 6, 4, 5}));
  const std::string annotations = "annotations: [{ops: x, spec: [data]}]\n";
  Expected<ShardingRequest> given = ShardingRequestFromYaml(
      "mesh: {shape: [8], axes: [data], devices: [gpu0, gpu1, gpu2, gpu3, gpu4, gpu5, gpu6, gpu7]}\n" + annotations,
      "s.yaml", dgx1, {});
  ASSERT_TRUE(given.ok()) << given.error().message;
  EXPECT_EQ(given->mesh.devices, (std::vector<DeviceId>{0, 1, 2, 3, 4, 5, 6, 7}));
  const std::string text = ReadFile(dgx1_file).value() +
                           "meshes:\n"
                           "  - {name: ring, shape: [8], axes: [data]}\n"
                           "  - {name: ids, shape: [4], axes: [data], devices: [gpu0, gpu1, gpu2, gpu3]}\n";
  const std::vector<Mesh> declared = MeshesFromYaml(text, "dgx1.yaml", dgx1).value();
  ASSERT_EQ(declared.size(), 2u);
  EXPECT_EQ(declared[0].devices, (std::vector<DeviceId>{0, 1, 2, 3, 7, 5, 6, 4}));
  EXPECT_EQ(declared[1].devices, (std::vector<DeviceId>{0, 1, 2, 3}));
}

TEST(Sharding, SpecFilesNameFileAndAnnotation) {
  const Topology t = Gpus(8);
  const std::vector<Mesh> declared = {MeshFromShorthand("8", {"model"}, t, "flat").value()};
  auto read = [&](const std::string& body, const std::string& shape = "") {
    return ShardingRequestFromYaml(body, "s.yaml", t, declared, shape);
  };
  Expected<ShardingRequest> ok = read(
      "mesh: {shape: [2, 4], axes: [data, model]}\n"
      "annotations:\n"
      "  - {ops: x, spec: [data, null, null]}\n"
      "  - {ops: ['*ffn1', 'ffn?x'], spec: [data, [], model], pad: true}\n"
      "  - {ops: ffn2, spec: [data, null, null], partial: model}\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_EQ(ok->annotations.size(), 4u);
  EXPECT_EQ(ok->annotations[1].origin, "s.yaml: annotations[1].ops[0]");
  EXPECT_EQ(ok->annotations[2].pattern, "ffn?x");
  EXPECT_TRUE(ok->annotations[2].allow_padding);
  EXPECT_EQ(ok->annotations[3].spec, Spec({{0}, {}, {}}, {1}));
  Expected<ShardingRequest> reshaped = read("mesh: flat\nannotations: [{ops: x, spec: [model]}]\n", "2");
  ASSERT_TRUE(reshaped.ok()) << reshaped.error().message;
  EXPECT_EQ(reshaped->mesh.shape, (std::vector<int64_t>{2}));
  auto error = [&](const std::string& body, const std::string& shape = "") {
    Expected<ShardingRequest> r = read(body, shape);
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  const std::string mesh = "mesh: {shape: [2, 4], axes: [data, model]}\n";
  EXPECT_EQ(error(mesh + "annotations: [{ops: x, spec: [data, pipe]}]\n"),
            "s.yaml: annotations[0].spec[1]: unknown mesh axis 'pipe' (mesh 'mesh' has data, model)");
  EXPECT_EQ(error(mesh + "annotations: [{ops: x, spec: [data, [model, data]]}]\n"),
            "s.yaml: annotations[0].spec[1][1]: mesh axis 'data' is used twice in one spec");
  EXPECT_EQ(error(mesh + "annotations: [{ops: x, spec: [data], partial: data}]\n"),
            "s.yaml: annotations[0].partial: mesh axis 'data' is used twice in one spec");
  EXPECT_EQ(error("mesh: m24\nannotations: [{ops: x, spec: [data]}]\n"),
            "s.yaml: mesh: topology 'gpus8' declares no mesh named 'm24'");
  EXPECT_EQ(error(mesh + "annotations: [{ops: x, spec: [data]}]\n", "4x4"),
            "s.yaml: mesh: --mesh mesh '4x4': needs 16 devices but topology 'gpus8' has 8");
  EXPECT_EQ(error(mesh + "annotations: []\n"), "s.yaml: annotations: needs at least one annotation");
  EXPECT_EQ(error(mesh + "annotations: [{op: x, spec: [data]}]\n"), "s.yaml: annotations[0].ops: missing required field");
  // ZeRO: `zero: AXIS` is stage 1; `zero: {axis, stage}` picks stage 1 or 3.
  const std::string ann = mesh + "annotations: [{ops: x, spec: [data]}]\n";
  Expected<ShardingRequest> z1 = read(ann + "zero: data\n"), z3 = read(ann + "zero: {axis: model, stage: 3}\n");
  ASSERT_TRUE(z1.ok() && z3.ok());
  EXPECT_EQ(z1->zero_axis, 0);
  EXPECT_EQ(z1->zero_stage, 1);
  EXPECT_EQ(z1->weight_shard_axis(), -1);
  EXPECT_EQ(z3->zero_axis, 1);
  EXPECT_EQ(z3->zero_stage, 3);
  EXPECT_EQ(z3->weight_shard_axis(), 1);
  EXPECT_EQ(read(ann + "zero: {axis: data}\n")->zero_stage, 1);
  EXPECT_EQ(error(ann + "zero: pipe\n"), "s.yaml: zero: unknown mesh axis 'pipe'");
  EXPECT_EQ(error(ann + "zero: {axis: pipe, stage: 3}\n"), "s.yaml: zero.axis: unknown mesh axis 'pipe'");
  EXPECT_EQ(error(ann + "zero: {axis: data, stage: 2}\n"),
            "s.yaml: zero.stage: stage 2 is not supported (give 1 or 3)");
  EXPECT_NE(error(ann + "zero: {axis: data, stage: 4}\n").find("s.yaml: zero.stage: "), std::string::npos);
  EXPECT_NE(error(ann + "zero: {axis: data, stages: 3}\n").find("s.yaml: zero.stages: unknown field"),
            std::string::npos);
}

}  // namespace
}  // namespace devplace

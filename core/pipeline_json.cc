#include "core/pipeline_json.h"

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/json_reader.h"
#include "core/sharding_json.h"

namespace devplace {

namespace {
constexpr const char* kFormat = "devplace.strategy";
constexpr int kVersion = 1;

// Reads a stage's {"first": ..., "last": ...} range of op or layer names into `ops`.
void ReadRange(JsonObject& stage, const std::string& key, const Graph& graph, StageOps* ops) {
  JsonObject range(stage.required(key), stage.source(), stage.path_of(key));
  std::string first = range.string("first"), last = range.string("last");
  range.finish();
  if (key == "layers") {
    ops->kind = StageOps::Kind::kLayerRange;
    ops->first_layer = std::move(first);
    ops->last_layer = std::move(last);
    return;
  }
  ops->kind = StageOps::Kind::kOpRange;
  auto find = [&](const std::string& name, const char* field) {
    const OpId id = graph.find(name);
    if (id < 0) range.fail(field, "no op named '" + name + "' in graph '" + graph.name() + "'");
    return id;
  };
  ops->first_op = find(first, "first");
  ops->last_op = find(last, "last");
}

PipelineStage ReadStage(const nlohmann::json& value, const std::string& source, const std::string& path,
                        const Graph& graph, const Topology& topology) {
  JsonObject entry(value, source, path);
  PipelineStage stage;
  stage.name = entry.string("name");
  const bool by_ops = entry.has("ops"), by_layers = entry.has("layers");
  if (by_ops == by_layers) entry.fail("ops", "give exactly one of \"ops\" and \"layers\"");
  ReadRange(entry, by_ops ? "ops" : "layers", graph, &stage.ops);
  const std::string dpath = entry.path_of("devices");
  const nlohmann::json& devices = RequireArray(entry.required("devices"), source, dpath);
  for (size_t k = 0; k < devices.size(); ++k) {
    const std::string name = ReadString(devices[k], source, dpath + "[" + std::to_string(k) + "]");
    const DeviceId d = topology.find_device(name);
    if (d < 0)
      FailAt(source, dpath + "[" + std::to_string(k) + "]",
             "unknown device '" + name + "' (topology '" + topology.name() + "')");
    stage.devices.push_back(d);
  }
  if (const nlohmann::json* shape = entry.optional("shape")) {
    const std::string spath = entry.path_of("shape");
    RequireArray(*shape, source, spath);
    for (size_t k = 0; k < shape->size(); ++k)
      stage.shape.push_back(
          static_cast<int32_t>(ReadInteger((*shape)[k], source, spath + "[" + std::to_string(k) + "]", 1, 1 << 20)));
  }
  stage.spec = entry.string_or("spec", "");
  if (const nlohmann::json* sharding = entry.optional("sharding")) {
    const std::string spath = entry.path_of("sharding");
    RequireArray(*sharding, source, spath);
    const Mesh mesh = StageMesh(stage);  // axes a0, a1, ... (the shape is validated with the plan)
    for (size_t k = 0; k < sharding->size(); ++k)
      ReadAnnotation((*sharding)[k], source, spath + "[" + std::to_string(k) + "]", mesh, &stage.sharding);
  }
  entry.finish();
  return stage;
}

// Reads the optional "reshard" object into `reshard`.
void ReadResharding(JsonObject& pipeline, PipelineResharding* reshard) {
  const nlohmann::json* value = pipeline.optional("reshard");
  if (!value) return;
  JsonObject object(*value, pipeline.source(), pipeline.path_of("reshard"));
  const std::string method = object.string_or("method", std::string(ToString(reshard->method)));
  const std::string balance = object.string_or("balance", std::string(ToString(reshard->balance)));
  Expected<ReshardMethod> m = ParseReshardMethod(method);
  if (!m.ok()) object.fail("method", m.error().message);
  Expected<ReshardBalance> b = ParseReshardBalance(balance);
  if (!b.ok()) object.fail("balance", b.error().message);
  reshard->method = *m;
  reshard->balance = *b;
  reshard->chunks = static_cast<int32_t>(object.integer_or("chunks", reshard->chunks, 1, kMaxReshardChunks));
  reshard->signal_only = object.boolean_or("signal_only", false);
  object.finish();
}

}  // namespace

Expected<StrategyForm> DetectStrategyForm(const std::string& text, const std::string& source) {
  return CatchInputErrors<StrategyForm>([&]() {
    const nlohmann::json doc = ParseJson(text, source);
    if (!doc.is_object()) FailAt(source, "", "expected a JSON object");
    return doc.contains("pipeline") ? StrategyForm::kPipeline : StrategyForm::kOps;
  });
}

Expected<StrategyForm> DetectStrategyFileForm(const std::string& path) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return DetectStrategyForm(*text, path);
}

std::string PipelinePlanToJson(const PipelinePlan& plan, const Graph& graph, const Topology& topology) {
  nlohmann::json stages = nlohmann::json::array();
  for (const PipelineStage& stage : plan.stages) {
    nlohmann::json devices = nlohmann::json::array();
    for (DeviceId d : stage.devices) devices.push_back(topology.device(d).name);
    nlohmann::json entry = {{"name", stage.name}, {"devices", std::move(devices)}};
    if (stage.ops.kind == StageOps::Kind::kOpRange)
      entry["ops"] = {{"first", graph.op(stage.ops.first_op).name}, {"last", graph.op(stage.ops.last_op).name}};
    else
      entry["layers"] = {{"first", stage.ops.first_layer}, {"last", stage.ops.last_layer}};
    if (!stage.shape.empty()) entry["shape"] = stage.shape;
    if (!stage.spec.empty()) entry["spec"] = stage.spec;
    if (!stage.sharding.empty()) {
      const Mesh mesh = StageMesh(stage);
      nlohmann::json& list = entry["sharding"] = nlohmann::json::array();
      for (const ShardingAnnotation& a : stage.sharding) {
        nlohmann::json item = {{"ops", a.pattern}, {"spec", SpecDimsToJson(a.spec, mesh)}};
        if (!a.spec.partial.empty()) item["partial"] = SpecPartialToJson(a.spec, mesh);
        if (a.allow_padding) item["pad"] = true;
        list.push_back(std::move(item));
      }
    }
    stages.push_back(std::move(entry));
  }
  nlohmann::json pipeline = {{"microbatches", plan.microbatches},
                             {"schedule", std::string(ToString(plan.schedule))},
                             {"delay_weight_gradients", plan.delay_weight_gradients},
                             {"stages", std::move(stages)}};
  if (plan.reshard != PipelineResharding{})
    pipeline["reshard"] = {{"method", std::string(ToString(plan.reshard.method))},
                           {"balance", std::string(ToString(plan.reshard.balance))},
                           {"chunks", plan.reshard.chunks},
                           {"signal_only", plan.reshard.signal_only}};
  nlohmann::json doc = {{"format", kFormat},          {"version", kVersion},
                        {"graph", graph.name()},      {"topology", topology.name()},
                        {"pipeline", std::move(pipeline)}};
  return doc.dump(1) + "\n";
}

Expected<PipelinePlan> PipelinePlanFromJson(const std::string& text, const std::string& source, const Graph& graph,
                                            const Topology& topology) {
  return CatchInputErrors<PipelinePlan>([&]() {
    nlohmann::json doc = ParseJson(text, source);
    JsonObject root(doc, source, "");
    if (root.string("format") != kFormat) root.fail("format", std::string("expected \"") + kFormat + "\"");
    root.integer("version", kVersion, kVersion);
    root.string_or("graph", "");     // informational
    root.string_or("topology", "");  // informational
    JsonObject pipeline(root.required("pipeline"), source, "pipeline");
    PipelinePlan plan;
    plan.microbatches = static_cast<int32_t>(pipeline.integer("microbatches", 1, kMaxMicrobatches));
    const std::string schedule = pipeline.string_or("schedule", "1f1b");
    if (!ParsePipelineSchedule(schedule, &plan.schedule))
      pipeline.fail("schedule", "unknown schedule '" + schedule + "' (expected gpipe, 1f1b or eager-1f1b)");
    plan.delay_weight_gradients = pipeline.boolean_or("delay_weight_gradients", false);
    ReadResharding(pipeline, &plan.reshard);
    const nlohmann::json& stages = RequireArray(pipeline.required("stages"), source, "pipeline.stages");
    for (size_t s = 0; s < stages.size(); ++s)
      plan.stages.push_back(
          ReadStage(stages[s], source, "pipeline.stages[" + std::to_string(s) + "]", graph, topology));
    pipeline.finish();
    root.finish();
    if (Status st = ValidatePipelinePlan(plan, graph, topology); !st.ok())
      throw InputError(source + ": " + st.error().message);
    return plan;
  });
}

Expected<PipelinePlan> ReadPipelinePlanFile(const std::string& path, const Graph& graph, const Topology& topology) {
  const Expected<std::string> text = ReadFile(path);
  return text.ok() ? PipelinePlanFromJson(*text, path, graph, topology) : Expected<PipelinePlan>(text.error());
}

Status WritePipelinePlanFile(const PipelinePlan& plan, const Graph& graph, const Topology& topology,
                             const std::string& path) {
  return WriteFileAtomic(path, PipelinePlanToJson(plan, graph, topology));
}

}  // namespace devplace

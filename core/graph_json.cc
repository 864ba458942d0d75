#include "core/graph_json.h"

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/json_reader.h"

namespace devplace {

namespace {

constexpr const char* kFormat = "devplace.graph";
constexpr int kVersion = 1;

nlohmann::json DimToJson(const PartitionDim& dim) {
  return {{"kind", ToString(dim.kind)}, {"output_axis", dim.output_axis}, {"input_axis", dim.input_axis},
          {"size", dim.size}};
}

nlohmann::json OpToJson(const Op& op) {
  nlohmann::json j = {{"name", op.name}, {"type", op.type}, {"role", ToString(op.role)},
                      {"shape", op.shape}, {"dtype", ToString(op.dtype)}, {"flops", op.flops}};
  if (!op.layer.empty()) j["layer"] = op.layer;
  if (op.param_bytes) j["param_bytes"] = op.param_bytes;
  if (!op.colocation.empty()) j["colocation"] = op.colocation;
  if (!op.forward_op.empty()) j["forward_op"] = op.forward_op;
  if (!op.dims.empty()) {
    nlohmann::json dims = nlohmann::json::array();
    for (const PartitionDim& d : op.dims) dims.push_back(DimToJson(d));
    j["dims"] = std::move(dims);
  }
  return j;
}

PartitionDim DimFromJson(const nlohmann::json& value, const std::string& source, const std::string& path) {
  JsonObject obj(value, source, path);
  PartitionDim dim;
  std::string kind = obj.string("kind");
  if (!ParseDimKind(kind, &dim.kind))
    obj.fail("kind", "unknown dimension kind '" + kind + "' (expected sample, attribute, parameter or reduction)");
  dim.output_axis = static_cast<int32_t>(obj.integer_or("output_axis", -1, -1, 64));
  dim.input_axis = static_cast<int32_t>(obj.integer_or("input_axis", -1, -1, 64));
  dim.size = obj.integer("size", 1);
  obj.finish();
  return dim;
}

Op OpFromJson(const nlohmann::json& value, const std::string& source, const std::string& path) {
  JsonObject obj(value, source, path);
  Op op;
  op.name = obj.string("name");
  op.type = obj.string("type");
  op.layer = obj.string_or("layer", "");
  std::string role = obj.string_or("role", "forward");
  if (!ParseOpRole(role, &op.role)) obj.fail("role", "unknown role '" + role + "' (expected forward, backward or update)");
  const nlohmann::json& shape = RequireArray(obj.required("shape"), source, obj.path_of("shape"));
  for (size_t i = 0; i < shape.size(); ++i)
    op.shape.push_back(ReadInteger(shape[i], source, obj.path_of("shape") + "[" + std::to_string(i) + "]", 1));
  std::string dtype = obj.string_or("dtype", "f32");
  if (!ParseDType(dtype, &op.dtype)) obj.fail("dtype", "unknown dtype '" + dtype + "'");
  op.flops = obj.number_or("flops", 0.0, 0.0);
  op.param_bytes = obj.integer_or("param_bytes", 0, 0);
  op.colocation = obj.string_or("colocation", "");
  op.forward_op = obj.string_or("forward_op", "");
  if (const nlohmann::json* dims = obj.optional("dims")) {
    RequireArray(*dims, source, obj.path_of("dims"));
    for (size_t i = 0; i < dims->size(); ++i)
      op.dims.push_back(DimFromJson((*dims)[i], source, obj.path_of("dims") + "[" + std::to_string(i) + "]"));
  }
  obj.finish();
  return op;
}

}  // namespace

std::string GraphToJson(const Graph& graph) {
  nlohmann::json ops = nlohmann::json::array();
  for (const Op& op : graph.ops()) ops.push_back(OpToJson(op));
  nlohmann::json edges = nlohmann::json::array();
  for (const Edge& e : graph.edges()) edges.push_back({e.src, e.dst, e.bytes});
  nlohmann::json doc = {{"format", kFormat}, {"version", kVersion}, {"name", graph.name()},
                        {"ops", std::move(ops)}, {"edges", std::move(edges)}};
  return doc.dump(1) + "\n";
}

Expected<Graph> GraphFromJson(const std::string& text, const std::string& source) {
  Expected<GraphBuilder> builder = CatchInputErrors<GraphBuilder>([&]() {
    if (std::optional<GraphBuilder> fast = GraphBuilderFromJsonFast(text)) return std::move(*fast);
    nlohmann::json doc = ParseJson(text, source);
    JsonObject root(doc, source, "");
    if (root.string("format") != kFormat) root.fail("format", std::string("expected \"") + kFormat + "\"");
    root.integer("version", kVersion, kVersion);
    GraphBuilder b(root.string_or("name", "graph"));
    const nlohmann::json& ops = RequireArray(root.required("ops"), source, "ops");
    if (ops.empty()) root.fail("ops", "must not be empty (a graph to place needs at least one op)");
    for (size_t i = 0; i < ops.size(); ++i) b.add_op(OpFromJson(ops[i], source, "ops[" + std::to_string(i) + "]"));
    const nlohmann::json& edges = RequireArray(root.required("edges"), source, "edges");
    const int64_t n = b.num_ops();
    for (size_t i = 0; i < edges.size(); ++i) {
      std::string path = "edges[" + std::to_string(i) + "]";
      const nlohmann::json& e = RequireArray(edges[i], source, path);
      if (e.size() != 3) FailAt(source, path, "expected [src, dst, bytes]");
      auto src = static_cast<OpId>(ReadInteger(e[0], source, path + "[0]", 0, n - 1));
      auto dst = static_cast<OpId>(ReadInteger(e[1], source, path + "[1]", 0, n - 1));
      b.add_edge(src, dst, ReadInteger(e[2], source, path + "[2]", 0));
    }
    root.finish();
    return b;
  });
  if (!builder.ok()) return builder.error();
  Expected<Graph> graph = std::move(builder.value()).Build();
  if (!graph.ok()) return Error{source + ": " + graph.error().message};
  return graph;
}

Expected<Graph> ReadGraphFile(const std::string& path) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return GraphFromJson(*text, path);
}

Status WriteGraphFile(const Graph& graph, const std::string& path) { return WriteFileAtomic(path, GraphToJson(graph)); }

}  // namespace devplace

// The Chakra importer: reads MLCommons Chakra execution trace nodes (the protobuf schema et_def.proto with
// either its field names, e.g. "data_deps", or the JSON names chakra_jsonizer writes, e.g. "dataDeps"; proto3
// JSON leaves out default values) and maps every node to an op with its recorded runtime. Dependencies that
// cannot be honoured (dangling, on the node itself, closing a cycle) are dropped with one warning. ImportChakraTrace
// also routes PyTorch execution traces and the JSON feeder layout ("workload_graph"). See docs/importers.md.
#include <cctype>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "datasets/import/importers.h"
#include "datasets/import/one_line.h"
#include "datasets/import/trace_internal.h"

namespace devplace {

namespace {

using nlohmann::json;

// Chakra's NodeType enum (et_def.proto; older schemas also had the last three).
const char* const kNodeTypes[] = {"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE",  "MEM_STORE_NODE",
                                  "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE",
                                  "STORAGE_NODE", "BATCH_NODE",     "CHECKPOINT_NODE"};
constexpr int kCompNode = 4, kCommSendNode = 5, kCommRecvNode = 6, kCommCollNode = 7;
// devplace op types of the non-compute node types, by NodeType value.
const char* const kNodeOpTypes[] = {"invalid",   "metadata", "mem_load", "mem_store", "compute",   "send",
                                    "recv",      "collective", "storage", "batch",     "checkpoint"};
// Chakra's CollectiveCommType enum, as devplace op types.
const char* const kCollectives[] = {"all_reduce", "reduce",         "all_gather",           "gather",  "scatter",
                                    "broadcast",  "all_to_all",     "reduce_scatter",       "reduce_scatter_block",
                                    "barrier"};
const char* const kCollectiveNames[] = {"ALL_REDUCE", "REDUCE",     "ALL_GATHER",     "GATHER",
                                        "SCATTER",    "BROADCAST",  "ALL_TO_ALL",     "REDUCE_SCATTER",
                                        "REDUCE_SCATTER_BLOCK", "BARRIER"};

class TraceReader {
 public:
  TraceReader(const std::string& source, std::vector<json> nodes) : source_(source), nodes_(std::move(nodes)) {}

  Expected<ImportResult> Build(const std::string& graph_name, const std::string& format);

 private:
  [[noreturn]] void Fail(size_t node, const std::string& what) const;
  static const json* Field(const json& obj, const char* snake, const char* camel);
  uint64_t Id(const json& value, size_t node, const char* field) const;
  std::optional<double> NumberAttr(const json& node, const std::string& name) const;
  std::optional<std::string> StringAttr(const json& node, const std::string& name) const;
  int NodeType(const json& node, size_t index) const;
  std::string CollectiveType(const json& node, const std::string& name) const;
  std::optional<double> InputBytes(const json& node) const;
  void AddDependencies(GraphBuilder& builder, const std::unordered_map<uint64_t, OpId>& by_id,
                       std::vector<std::string>& warnings) const;

  const std::string& source_;
  std::vector<json> nodes_;
};

// Thrown inside TraceReader and turned into an Error by ImportChakraTrace.
struct TraceError {
  std::string message;
};

void TraceReader::Fail(size_t node, const std::string& what) const {
  throw TraceError{source_ + ": nodes[" + std::to_string(node) + "]: " + what};
}

const json* TraceReader::Field(const json& obj, const char* snake, const char* camel) {
  auto it = obj.find(snake);
  if (it == obj.end()) it = obj.find(camel);
  return it == obj.end() ? nullptr : &*it;
}

// Proto3 JSON writes 64-bit integers as strings; both forms are accepted.
uint64_t TraceReader::Id(const json& value, size_t node, const char* field) const {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (!s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos) return std::stoull(s);
  }
  Fail(node, std::string(field) + ": expected a non-negative integer id, got " + value.dump());
}

// Attributes: [{"name": "num_ops", "int64_val": 123}, ...] (or "int64Val": "123").
std::optional<double> TraceReader::NumberAttr(const json& node, const std::string& name) const {
  const json* attrs = Field(node, "attr", "attr");
  if (!attrs || !attrs->is_array()) return std::nullopt;
  for (const json& a : *attrs) {
    if (!a.is_object() || a.value("name", json()) != name) continue;
    for (auto& [key, value] : a.items()) {
      if (key == "name" || key == "doc_string" || key == "docString") continue;
      if (value.is_number()) return value.get<double>();
      if (value.is_string()) {
        const std::string& s = value.get_ref<const std::string&>();
        char* end = nullptr;
        const double x = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(x)) return x;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> TraceReader::StringAttr(const json& node, const std::string& name) const {
  const json* attrs = Field(node, "attr", "attr");
  if (!attrs || !attrs->is_array()) return std::nullopt;
  for (const json& a : *attrs) {
    if (!a.is_object() || a.value("name", json()) != name) continue;
    for (auto& [key, value] : a.items())
      if (key != "name" && key != "doc_string" && key != "docString" && value.is_string()) return value.get<std::string>();
  }
  return std::nullopt;
}

// Proto3 JSON leaves out a zero enum: a node without "type" is INVALID_NODE (0).
int TraceReader::NodeType(const json& node, size_t index) const {
  const json* type = Field(node, "type", "type");
  if (!type) return 0;
  constexpr int n = static_cast<int>(std::size(kNodeTypes));
  if (type->is_number_integer() && type->get<int64_t>() >= 0 && type->get<int64_t>() < n)
    return static_cast<int>(type->get<int64_t>());
  if (type->is_string())
    for (int t = 0; t < n; ++t)
      if (type->get_ref<const std::string&>() == kNodeTypes[t]) return t;
  Fail(index, "type: unknown node type " + type->dump() + " (expected COMP_NODE, COMM_COLL_NODE, ...)");
}

// The collective from attr comm_type (a CollectiveCommType value or name), else from the node's name; "" when
// neither says.
std::string TraceReader::CollectiveType(const json& node, const std::string& name) const {
  constexpr int n = static_cast<int>(std::size(kCollectives));
  if (std::optional<double> t = NumberAttr(node, "comm_type"))
    if (*t >= 0 && *t < n && *t == std::floor(*t)) return kCollectives[static_cast<int>(*t)];
  if (std::optional<std::string> s = StringAttr(node, "comm_type"))
    for (int t = 0; t < n; ++t)
      if (*s == kCollectiveNames[t]) return kCollectives[t];
  if (NumberAttr(node, "comm_type") || StringAttr(node, "comm_type")) return "";
  return import_detail::CollectiveFromName(name);
}

// The first shape in an IOInfo shapes string such as "[[64, 1024], [1024]]" (or a JSON array of arrays).
std::optional<std::vector<int64_t>> FirstShape(const json& io) {
  const json* shapes = io.is_object() && io.contains("shapes") ? &io["shapes"] : nullptr;
  if (!shapes) return std::nullopt;
  std::string text = shapes->is_string() ? shapes->get<std::string>() : shapes->dump();
  size_t open = std::string::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') open = i;
    else if (text[i] == ']' && open != std::string::npos) break;
    else if (text[i] != ' ' && text[i] != ',' && !std::isdigit(static_cast<unsigned char>(text[i])) && text[i] != '-')
      return std::nullopt;
  }
  if (open == std::string::npos) return std::nullopt;
  std::vector<int64_t> dims;
  size_t pos = open + 1;
  while (pos < text.size() && text[pos] != ']') {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == ',')) ++pos;
    if (pos >= text.size() || text[pos] == ']') break;
    size_t end = pos;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == pos || end - pos > 12) return std::nullopt;  // negative, empty or absurd extents: no shape
    dims.push_back(std::stoll(text.substr(pos, end - pos)));
    if (dims.back() <= 0) return std::nullopt;
    pos = end;
  }
  return dims;
}

// The quoted names in an IOInfo types string such as "['Tensor(float)', 'Int']" (or a JSON array of strings).
std::vector<std::string> TypeNames(const json& io) {
  std::vector<std::string> names;
  if (!io.is_object() || !io.contains("types")) return names;
  const json& types = io["types"];
  if (types.is_array()) {
    for (const json& t : types) names.push_back(t.is_string() ? t.get<std::string>() : "");
    return names;
  }
  if (!types.is_string()) return names;
  const std::string& text = types.get_ref<const std::string&>();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\'' && text[i] != '"') continue;
    const size_t end = text.find(text[i], i + 1);
    if (end == std::string::npos) break;
    names.push_back(text.substr(i + 1, end - i - 1));
    i = end;
  }
  return names;
}

DType TypeOf(const json& io) {
  std::vector<std::string> names = TypeNames(io);
  DType dtype = DType::kF32;
  if (!names.empty()) import_detail::DTypeFromName(names[0], &dtype);
  return dtype;
}

// Bytes of the tensor inputs: each shape of inputs.shapes times the size of its type in inputs.types.
std::optional<double> TraceReader::InputBytes(const json& node) const {
  const json* inputs = Field(node, "inputs", "inputs");
  if (!inputs || !inputs->is_object() || !inputs->contains("shapes")) return std::nullopt;
  const json& shapes_field = (*inputs)["shapes"];
  json shapes = shapes_field.is_string() ? json::parse(shapes_field.get<std::string>(), nullptr, false) : shapes_field;
  const std::vector<std::string> types = TypeNames(*inputs);
  if (!shapes.is_array() || shapes.size() != types.size()) return std::nullopt;
  double bytes = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    DType dtype;
    if (types[i].rfind("Tensor", 0) != 0 || !import_detail::DTypeFromName(types[i], &dtype) || !shapes[i].is_array())
      continue;
    double elements = 1;
    for (const json& d : shapes[i]) elements *= d.is_number() ? std::max(0.0, d.get<double>()) : 0.0;
    bytes += elements * static_cast<double>(DTypeBytes(dtype));
  }
  return bytes > 0 ? std::optional<double>(bytes) : std::nullopt;
}

OpRole RoleOf(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("backward") != std::string::npos) return OpRole::kBackward;
  if (lower.find("optimizer") != std::string::npos) return OpRole::kUpdate;
  return OpRole::kForward;
}

std::string Counted(size_t count, const char* what) { return std::to_string(count) + " " + what; }

Expected<ImportResult> TraceReader::Build(const std::string& graph_name, const std::string& format) {
  ImportResult result;
  result.format = format;
  GraphBuilder builder(graph_name);
  std::unordered_map<uint64_t, OpId> by_id;
  std::map<std::string, int> name_count;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].is_object()) Fail(i, "expected an object");
    const json* id = Field(nodes_[i], "id", "id");
    ids.push_back(id ? Id(*id, i, "id") : 0);  // proto3 JSON leaves out id 0
    if (!by_id.emplace(ids.back(), static_cast<OpId>(i)).second)
      Fail(i, "id: duplicate node id " + std::to_string(ids.back()));
    const json* name = Field(nodes_[i], "name", "name");
    if (name && !name->is_string()) Fail(i, "name: expected a string");
    ++name_count[name ? name->get<std::string>() : ""];
  }
  size_t no_duration = 0, invalid = 0, no_size = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const json& node = nodes_[i];
    const json* name_field = Field(node, "name", "name");
    const std::string name = name_field ? name_field->get<std::string>() : "";
    Op op;
    op.name = name.empty() || name_count[name] > 1 ? (name.empty() ? "node" : name) + "#" + std::to_string(ids[i]) : name;
    const int type = NodeType(node, i);
    if (type == kCompNode) {
      op.type = import_detail::OpTypeFromName(name);
    } else if (type == kCommCollNode) {
      op.type = CollectiveType(node, name);
      if (op.type.empty()) {
        result.warnings.push_back(source_ + ": nodes[" + std::to_string(i) + "] ('" + op.name +
                                  "'): unknown collective (no known comm_type and none in its name): imported as "
                                  "op type 'collective' with its recorded time");
        op.type = "collective";
      }
    } else {
      op.type = kNodeOpTypes[type];
    }
    invalid += type == 0;
    op.role = RoleOf(name);
    const json* outputs = Field(node, "outputs", "outputs");
    const bool comm = type == kCommCollNode || type == kCommSendNode || type == kCommRecvNode;
    std::optional<double> size = NumberAttr(node, comm ? "comm_size" : "tensor_size");
    if (comm && (!size || *size <= 0)) size = InputBytes(node);
    if (std::optional<std::vector<int64_t>> shape = outputs ? FirstShape(*outputs) : std::nullopt; shape && !comm) {
      op.shape = *shape;
      op.dtype = TypeOf(*outputs);
    } else if (size && *size >= 1 && *size <= static_cast<double>(kMaxTensorBytes)) {
      op.shape = {static_cast<int64_t>(*size)};  // bytes
      op.dtype = DType::kI8;
    } else if (comm && op.type != "barrier") {
      ++no_size;
    }
    if (std::optional<double> flops = NumberAttr(node, "num_ops")) {
      if (*flops < 0) Fail(i, "attr num_ops: must be >= 0");
      op.flops = *flops;
    }
    double micros = 0;
    if (const json* d = Field(node, "duration_micros", "durationMicros")) micros = static_cast<double>(Id(*d, i, "duration_micros"));
    no_duration += micros == 0;
    result.measured_seconds.push_back(micros * 1e-6);
    builder.add_op(std::move(op));
  }
  if (no_duration > 0)
    result.warnings.push_back(source_ + ": " + Counted(no_duration, "of ") + std::to_string(nodes_.size()) +
                              " nodes have no recorded duration");
  if (invalid > 0)
    result.warnings.push_back(source_ + ": " + Counted(invalid, "nodes have no type (INVALID_NODE): imported as op type 'invalid'"));
  if (no_size > 0)
    result.warnings.push_back(source_ + ": " + Counted(no_size, "communication nodes have no size (no comm_size, no tensor inputs): 4 bytes assumed"));
  AddDependencies(builder, by_id, result.warnings);
  Expected<Graph> graph = std::move(builder).Build();
  if (!graph.ok()) return Error{source_ + ": " + graph.error().message};
  result.graph = std::move(*graph);
  return result;
}

// Data dependencies carry the producer's output; control dependencies only order (0 bytes). Dependencies on
// unknown ids or on the node itself are dropped, and so is every dependency that closes a cycle (a back edge of a
// depth-first search in file order, data dependencies explored first); one warning counts what was dropped.
void TraceReader::AddDependencies(GraphBuilder& builder, const std::unordered_map<uint64_t, OpId>& by_id,
                                  std::vector<std::string>& warnings) const {
  const size_t n = nodes_.size();
  std::vector<std::vector<std::pair<OpId, bool>>> deps(n);  // (producer, carries data)
  size_t dangling = 0, self = 0, cyclic = 0;
  for (size_t i = 0; i < n; ++i) {
    std::map<OpId, bool> unique;
    for (auto [snake, camel, data] : {std::tuple{"data_deps", "dataDeps", true}, {"ctrl_deps", "ctrlDeps", false}}) {
      const json* list = Field(nodes_[i], snake, camel);
      if (!list) continue;
      if (!list->is_array()) Fail(i, std::string(snake) + ": expected an array of node ids");
      for (const json& dep : *list) {
        auto it = by_id.find(Id(dep, i, snake));
        if (it == by_id.end()) ++dangling;
        else if (it->second == static_cast<OpId>(i)) ++self;
        else unique[it->second] = unique[it->second] || data;
      }
    }
    for (auto [src, data] : unique) deps[i].emplace_back(src, data);
    std::stable_sort(deps[i].begin(), deps[i].end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  // Iterative DFS from every node along its dependencies; an edge to a node still on the stack closes a cycle.
  enum : uint8_t { kNew, kOnStack, kDone };
  std::vector<uint8_t> state(n, kNew);
  std::vector<std::vector<bool>> keep(n);
  for (size_t i = 0; i < n; ++i) keep[i].assign(deps[i].size(), true);
  std::vector<std::pair<size_t, size_t>> stack;  // (node, next dependency to visit)
  for (size_t root = 0; root < n; ++root) {
    if (state[root] != kNew) continue;
    stack.emplace_back(root, 0);
    state[root] = kOnStack;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == deps[node].size()) {
        state[node] = kDone;
        stack.pop_back();
        continue;
      }
      const size_t k = next++;
      const size_t dep = static_cast<size_t>(deps[node][k].first);
      if (state[dep] == kOnStack) {
        keep[node][k] = false;
        ++cyclic;
      } else if (state[dep] == kNew) {
        state[dep] = kOnStack;
        stack.emplace_back(dep, 0);
      }
    }
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < deps[i].size(); ++k)
      if (keep[i][k]) builder.add_edge(deps[i][k].first, static_cast<OpId>(i), deps[i][k].second ? -1 : 0);
  if (dangling + self + cyclic > 0)
    warnings.push_back(source_ + ": dropped dependencies that cannot be honoured: " + Counted(dangling, "on ids not in the trace, ") +
                       Counted(self, "of a node on itself, ") + Counted(cyclic, "closing a cycle"));
}

// chakra's JSON feeder layout ({"workload_graph": [{"Id", "Name", "NodeType", "runtime", "data_deps", "ctrlDeps",
// "comm_type", "comm_size", "tensor_size"}, ...]}) as Chakra nodes.
std::vector<json> FromWorkloadGraph(const json& list) {
  std::vector<json> nodes;
  for (const json& w : list) {
    if (!w.is_object()) {
      nodes.push_back(w);
      continue;
    }
    json node = json::object();
    for (auto [from, to] : {std::pair{"Id", "id"}, {"Name", "name"}, {"NodeType", "type"}, {"runtime", "duration_micros"},
                            {"data_deps", "data_deps"}, {"ctrlDeps", "ctrl_deps"}, {"ctrl_deps", "ctrl_deps"}})
      if (w.contains(from)) node[to] = w[from];
    json attrs = json::array();
    for (const char* key : {"comm_type", "comm_size", "tensor_size"})
      if (w.contains(key)) attrs.push_back({{"name", key}, {"int64_val", w[key]}});
    node["attr"] = std::move(attrs);
    nodes.push_back(std::move(node));
  }
  return nodes;
}

// The node objects of the documents: one object with "nodes", arrays of nodes, or a jsonizer stream.
Expected<std::vector<json>> CollectNodes(std::vector<json>& docs, const std::string& source) {
  std::vector<json> nodes;
  for (json& doc : docs) {
    if (doc.is_array()) {
      for (json& n : doc) nodes.push_back(std::move(n));
    } else if (doc.is_object() && doc.contains("workload_graph")) {
      if (!doc["workload_graph"].is_array()) return Error{source + ": workload_graph: expected an array"};
      for (json& n : FromWorkloadGraph(doc["workload_graph"])) nodes.push_back(std::move(n));
    } else if (doc.is_object() && doc.contains("nodes")) {
      json& list = doc["nodes"];
      if (!list.is_array()) return Error{source + ": nodes: expected an array"};
      for (json& n : list) nodes.push_back(std::move(n));
    } else if (doc.is_object() && !doc.contains("id") && !doc.contains("type") && !doc.contains("name")) {
      continue;  // chakra_jsonizer's GlobalMetadata object
    } else if (doc.is_object()) {
      nodes.push_back(std::move(doc));
    } else {
      return Error{source + ": expected a Chakra trace (an object with \"nodes\", or node objects)"};
    }
  }
  if (nodes.empty()) return Error{source + ": the trace has no nodes"};
  return nodes;
}

}  // namespace

namespace import_detail {

Expected<ImportResult> ImportChakraNodes(std::vector<json> nodes, const std::string& source,
                                         const std::string& graph_name, const std::string& format) {
  TraceReader reader(source, std::move(nodes));
  try {
    return OneLineMessages(reader.Build(graph_name.empty() ? "trace" : graph_name, format));
  } catch (const TraceError& e) {
    return Error{OneLine(e.message)};
  } catch (const json::exception& e) {
    return Error{OneLine(source + ": " + e.what())};
  }
}

}  // namespace import_detail

Expected<ImportResult> ImportChakraTrace(std::string_view text, const std::string& source,
                                         const std::string& graph_name, const ImportOptions& /*options*/) {
  Expected<std::vector<json>> docs = import_detail::ParseJsonDocuments(text, source);
  if (!docs.ok()) return Error{import_detail::OneLine(docs.error().message)};
  if (docs->size() == 1 && import_detail::IsPyTorchExecutionTrace(docs->front()))
    return import_detail::ImportPyTorchExecutionTrace(docs->front(), source, graph_name.empty() ? "trace" : graph_name);
  if (docs->size() == 1 && import_detail::IsKinetoTrace(docs->front()))
    return import_detail::ImportKinetoTrace(docs->front(), source, graph_name.empty() ? "trace" : graph_name);
  Expected<std::vector<json>> nodes = CollectNodes(*docs, source);
  if (!nodes.ok()) return Error{import_detail::OneLine(nodes.error().message)};
  return import_detail::ImportChakraNodes(std::move(*nodes), source, graph_name, "chakra");
}

}  // namespace devplace

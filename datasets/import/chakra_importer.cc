// The Chakra importer: reads an MLCommons Chakra execution trace in JSON (the protobuf schema et_def.proto with
// either its field names, e.g. "data_deps", or the JSON names chakra_jsonizer writes, e.g. "dataDeps") and maps
// every node to an op with its recorded runtime. The mapping is documented in docs/importers.md.
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

namespace devplace {

namespace {

using nlohmann::json;

// Nesting deeper than this is rejected before parsing (the JSON parser recurses).
constexpr int kMaxDepth = 64;

// Chakra's NodeType enum (et_def.proto).
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

// Rejects nesting deeper than kMaxDepth (outside strings) so that parsing cannot exhaust the stack.
bool DepthOk(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

class TraceReader {
 public:
  explicit TraceReader(const std::string& source) : source_(source) {}

  // Parses the document(s) into the list of node objects.
  Status Parse(std::string_view text);
  Expected<ImportResult> Build(const std::string& graph_name);

 private:
  [[noreturn]] void Fail(size_t node, const std::string& what) const;
  static const json* Field(const json& obj, const char* snake, const char* camel);
  uint64_t Id(const json& value, size_t node, const char* field) const;
  std::optional<double> NumberAttr(const json& node, const std::string& name) const;
  std::optional<std::string> StringAttr(const json& node, const std::string& name) const;
  int NodeType(const json& node, size_t index) const;
  std::string CollectiveType(const json& node, size_t index) const;

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

Status TraceReader::Parse(std::string_view text) {
  if (!DepthOk(text)) return Error{source_ + ": invalid JSON: nested deeper than " + std::to_string(kMaxDepth)};
  std::istringstream in{std::string(text)};
  std::vector<json> docs;
  while (true) {
    in >> std::ws;
    if (in.peek() == std::char_traits<char>::eof()) break;
    json doc;
    try {
      in >> doc;
    } catch (const json::exception& e) {
      return Error{source_ + ": invalid JSON: " + e.what()};
    }
    docs.push_back(std::move(doc));
  }
  for (json& doc : docs) {
    if (doc.is_array()) {
      for (json& n : doc) nodes_.push_back(std::move(n));
    } else if (doc.is_object() && doc.contains("nodes")) {
      json& list = doc["nodes"];
      if (!list.is_array()) return Error{source_ + ": nodes: expected an array"};
      for (json& n : list) nodes_.push_back(std::move(n));
    } else if (doc.is_object() && !doc.contains("id") && !doc.contains("type")) {
      continue;  // chakra_jsonizer's GlobalMetadata object
    } else if (doc.is_object()) {
      nodes_.push_back(std::move(doc));
    } else {
      return Error{source_ + ": expected a Chakra trace (an object with \"nodes\", or node objects)"};
    }
  }
  if (nodes_.empty()) return Error{source_ + ": the trace has no nodes"};
  return Status::Ok();
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

int TraceReader::NodeType(const json& node, size_t index) const {
  const json* type = Field(node, "type", "type");
  if (!type) Fail(index, "type: missing required field");
  constexpr int n = static_cast<int>(std::size(kNodeTypes));
  if (type->is_number_integer() && type->get<int64_t>() > 0 && type->get<int64_t>() < n)
    return static_cast<int>(type->get<int64_t>());
  if (type->is_string())
    for (int t = 1; t < n; ++t)
      if (type->get_ref<const std::string&>() == kNodeTypes[t]) return t;
  Fail(index, "type: unknown node type " + type->dump() + " (expected COMP_NODE, COMM_COLL_NODE, ...)");
}

std::string TraceReader::CollectiveType(const json& node, size_t index) const {
  constexpr int n = static_cast<int>(std::size(kCollectives));
  if (std::optional<double> t = NumberAttr(node, "comm_type")) {
    if (*t >= 0 && *t < n && *t == std::floor(*t)) return kCollectives[static_cast<int>(*t)];
    Fail(index, "attr comm_type: unknown collective " + std::to_string(*t));
  }
  if (std::optional<std::string> s = StringAttr(node, "comm_type")) {
    for (int t = 0; t < n; ++t)
      if (*s == kCollectiveNames[t]) return kCollectives[t];
    Fail(index, "attr comm_type: unknown collective '" + *s + "'");
  }
  return "all_reduce";  // Chakra's default (enum value 0)
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

DType TypeOf(const json& io) {
  if (!io.is_object() || !io.contains("types")) return DType::kF32;
  std::string t = io["types"].is_string() ? io["types"].get<std::string>() : io["types"].dump();
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t comma = t.find(',');
  t = t.substr(0, comma);
  if (t.find("bfloat16") != std::string::npos) return DType::kBF16;
  if (t.find("half") != std::string::npos || t.find("float16") != std::string::npos) return DType::kF16;
  if (t.find("double") != std::string::npos || t.find("float64") != std::string::npos) return DType::kF64;
  if (t.find("float") != std::string::npos) return DType::kF32;
  if (t.find("long") != std::string::npos || t.find("int64") != std::string::npos) return DType::kI64;
  if (t.find("bool") != std::string::npos) return DType::kBool;
  if (t.find("int8") != std::string::npos || t.find("char") != std::string::npos) return DType::kI8;
  if (t.find("int") != std::string::npos) return DType::kI32;
  return DType::kF32;
}

// "aten::addmm" -> "addmm"; "autograd::engine::evaluate_function: AddmmBackward0" -> "addmmbackward0".
std::string ComputeType(const std::string& name) {
  std::string base = name;
  if (size_t p = base.rfind("::"); p != std::string::npos) base = base.substr(p + 2);
  if (size_t p = base.rfind(": "); p != std::string::npos) base = base.substr(p + 2);
  std::string type;
  for (char c : base) {
    if (std::isalnum(static_cast<unsigned char>(c))) type += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!type.empty() && type.back() != '_') type += '_';
  }
  while (!type.empty() && type.back() == '_') type.pop_back();
  return type.empty() ? "compute" : type;
}

OpRole RoleOf(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("backward") != std::string::npos) return OpRole::kBackward;
  if (lower.find("optimizer") != std::string::npos) return OpRole::kUpdate;
  return OpRole::kForward;
}

Expected<ImportResult> TraceReader::Build(const std::string& graph_name) {
  ImportResult result;
  result.format = "chakra";
  GraphBuilder builder(graph_name);
  std::unordered_map<uint64_t, OpId> by_id;
  std::map<std::string, int> name_count;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].is_object()) Fail(i, "expected an object");
    const json* id = Field(nodes_[i], "id", "id");
    if (!id) Fail(i, "id: missing required field");
    ids.push_back(Id(*id, i, "id"));
    if (!by_id.emplace(ids.back(), static_cast<OpId>(i)).second)
      Fail(i, "id: duplicate node id " + std::to_string(ids.back()));
    const json* name = Field(nodes_[i], "name", "name");
    if (name && !name->is_string()) Fail(i, "name: expected a string");
    ++name_count[name ? name->get<std::string>() : ""];
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const json& node = nodes_[i];
    const json* name_field = Field(node, "name", "name");
    const std::string name = name_field ? name_field->get<std::string>() : "";
    Op op;
    op.name = name.empty() || name_count[name] > 1 ? (name.empty() ? "node" : name) + "#" + std::to_string(ids[i]) : name;
    const int type = NodeType(node, i);
    if (type == kCompNode)
      op.type = ComputeType(name);
    else if (type == kCommCollNode)
      op.type = CollectiveType(node, i);
    else
      op.type = kNodeOpTypes[type];
    op.role = RoleOf(name);
    const json* outputs = Field(node, "outputs", "outputs");
    const bool comm = type == kCommCollNode || type == kCommSendNode || type == kCommRecvNode;
    const std::optional<double> size = NumberAttr(node, comm ? "comm_size" : "tensor_size");
    if (std::optional<std::vector<int64_t>> shape = outputs ? FirstShape(*outputs) : std::nullopt; shape && !comm) {
      op.shape = *shape;
      op.dtype = TypeOf(*outputs);
    } else if (size && *size >= 1 && *size <= static_cast<double>(kMaxTensorBytes)) {
      op.shape = {static_cast<int64_t>(*size)};  // bytes
      op.dtype = DType::kI8;
    }
    if (std::optional<double> flops = NumberAttr(node, "num_ops")) {
      if (*flops < 0) Fail(i, "attr num_ops: must be >= 0");
      op.flops = *flops;
    }
    double micros = 0;
    if (const json* d = Field(node, "duration_micros", "durationMicros")) micros = static_cast<double>(Id(*d, i, "duration_micros"));
    if (micros == 0)
      result.warnings.push_back(source_ + ": nodes[" + std::to_string(i) + "] ('" + op.name + "') has no recorded duration");
    result.measured_seconds.push_back(micros * 1e-6);
    builder.add_op(std::move(op));
  }
  // Data dependencies carry the producer's output; control dependencies only order (0 bytes).
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::map<OpId, bool> deps;  // producer -> carries data
    for (auto [snake, camel, data] : {std::tuple{"data_deps", "dataDeps", true}, {"ctrl_deps", "ctrlDeps", false}}) {
      const json* list = Field(nodes_[i], snake, camel);
      if (!list) continue;
      if (!list->is_array()) Fail(i, std::string(snake) + ": expected an array of node ids");
      for (const json& dep : *list) {
        const uint64_t id = Id(dep, i, snake);
        auto it = by_id.find(id);
        if (it == by_id.end()) Fail(i, std::string(snake) + ": unknown node id " + std::to_string(id));
        if (it->second == static_cast<OpId>(i)) Fail(i, std::string(snake) + ": a node cannot depend on itself");
        deps[it->second] = deps[it->second] || data;
      }
    }
    for (auto [src, data] : deps) builder.add_edge(src, static_cast<OpId>(i), data ? -1 : 0);
  }
  Expected<Graph> graph = std::move(builder).Build();
  if (!graph.ok()) return Error{source_ + ": " + graph.error().message};
  result.graph = std::move(*graph);
  return result;
}

}  // namespace

Expected<ImportResult> ImportChakraTrace(std::string_view text, const std::string& source,
                                         const std::string& graph_name, const ImportOptions& /*options*/) {
  TraceReader reader(source);
  try {
    if (Status s = reader.Parse(text); !s.ok()) return Error{import_detail::OneLine(s.error().message)};
    return import_detail::OneLineMessages(reader.Build(graph_name.empty() ? "trace" : graph_name));
  } catch (const TraceError& e) {
    return Error{import_detail::OneLine(e.message)};
  } catch (const json::exception& e) {
    return Error{import_detail::OneLine(source + ": " + e.what())};
  }
}

}  // namespace devplace

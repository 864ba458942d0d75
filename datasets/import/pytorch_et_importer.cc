// The PyTorch execution-trace importer: the JSON that torch.profiler's ExecutionTraceObserver writes (schemas
// 1.0.1 through 1.1.1-chakra.0.0.4), a tree of host ops (labels such as ProfilerStep#N and the autograd engine's
// evaluate_function, ATen operators and the operators they call) with the tensors each reads and writes. One op per
// outermost operator (an operator with no operator above it), so nested calls are not counted twice; data
// dependencies follow the tensors. The mapping is documented in docs/importers.md.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "datasets/import/one_line.h"
#include "datasets/import/pytorch_et_flops.h"
#include "datasets/import/trace_internal.h"

namespace devplace::import_detail {

namespace {

using nlohmann::json;

// A recorded tensor: its identity (tensor id, storage id, offset, elements, element size), shape and dtype.
struct EtTensor {
  std::string key;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  int64_t bytes = 0;
};

// One trace node in either layout (1.0.1: flat fields; 1.0.2 and later: inputs/outputs objects and attrs).
struct EtNode {
  uint64_t id = 0;
  std::string name;
  std::optional<uint64_t> parent;
  std::string op_schema, kernel_backend;
  std::vector<EtArg> in_args, out_args;
  std::vector<EtTensor> in_tensors, out_tensors;
  std::vector<std::string> strings;  // string-valued inputs (record_param_comms names its collective there)
  std::map<std::string, const json*> attrs;
};

struct EtError {
  std::string message;
};

class EtReader {
 public:
  EtReader(const json& doc, const std::string& source) : doc_(doc), source_(source) {}
  Expected<ImportResult> Import(const std::string& graph_name);

 private:
  [[noreturn]] void Fail(size_t node, const std::string& what) const {
    throw EtError{source_ + ": nodes[" + std::to_string(node) + "]: " + what};
  }
  uint64_t Uint(const json& v, size_t node, const char* field) const;
  void ReadArgs(const json& values, const json& shapes, const json& types, size_t node, const char* field,
                std::vector<EtArg>& args, std::vector<EtTensor>& tensors, std::vector<std::string>* strings) const;
  EtNode ReadNode(const json& n, size_t index) const;
  void Classify();
  bool IsComm(const EtNode& n) const { return n.name == "record_param_comms" || n.name.rfind("nccl:", 0) == 0; }
  bool IsOperator(const EtNode& n) const;
  std::string Collective(const EtNode& n) const;
  Expected<ImportResult> Build(const std::string& graph_name, const std::vector<size_t>& order, uint64_t lo,
                               uint64_t hi, const std::vector<std::optional<double>>& own,
                               const std::vector<double>& total);

  const json& doc_;
  const std::string& source_;
  std::vector<EtNode> nodes_;
  std::vector<int32_t> parent_;  // index of the parent node, or -1
  std::vector<int32_t> outer_;   // index of the outermost operator at or above the node, or -1
  std::vector<int32_t> depth_;   // distance from the root of the node's tree
  std::vector<OpRole> role_;
  std::vector<std::string> layer_;
  std::vector<std::string> warnings_;
};

uint64_t EtReader::Uint(const json& v, size_t node, const char* field) const {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  Fail(node, std::string(field) + ": expected a non-negative integer, got " + v.dump().substr(0, 40));
}

// A tensor value is [tensor id, storage id, offset, elements, element size, device]; its shape is a list of
// extents. Values of GenericList[Tensor(...)] are lists of those.
void EtReader::ReadArgs(const json& values, const json& shapes, const json& types, size_t node, const char* field,
                        std::vector<EtArg>& args, std::vector<EtTensor>& tensors,
                        std::vector<std::string>* strings) const {
  if (!values.is_array() || !shapes.is_array() || !types.is_array() || values.size() != shapes.size() ||
      values.size() != types.size())
    Fail(node, std::string(field) + ": expected values, shapes and types as arrays of the same length");
  auto tensor = [&](const json& value, const json& shape, const std::string& type) -> std::optional<EtTensor> {
    if (!value.is_array() || value.empty() || !shape.is_array()) return std::nullopt;
    EtTensor t;
    for (const json& v : value)
      if (v.is_number_integer()) t.key += std::to_string(v.get<int64_t>()) + ",";
    double elements = 1;
    for (const json& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) return std::nullopt;  // symbolic or nested: no tensor
      t.shape.push_back(d.get<int64_t>());
      elements *= static_cast<double>(t.shape.back());
    }
    if (!DTypeFromName(type, &t.dtype) && value.size() > 4 && value[4].is_number_integer() && value[4].get<int64_t>() == 1)
      t.dtype = DType::kI8;
    const double bytes = elements * static_cast<double>(DTypeBytes(t.dtype));
    if (bytes > static_cast<double>(kMaxTensorBytes)) Fail(node, std::string(field) + ": tensor of absurd size");
    t.bytes = static_cast<int64_t>(bytes);
    return t;
  };
  for (size_t i = 0; i < values.size(); ++i) {
    EtArg arg;
    arg.value = &values[i];
    const std::string type = types[i].is_string() ? types[i].get<std::string>() : "";
    if (type.rfind("Tensor", 0) == 0) {
      if (std::optional<EtTensor> t = tensor(values[i], shapes[i], type)) {
        arg.is_tensor = true;
        arg.shape = t->shape;
        arg.tensors = 1;
        tensors.push_back(std::move(*t));
      }
    } else if (type.rfind("GenericList[Tensor", 0) == 0 && values[i].is_array() && shapes[i].is_array() &&
               values[i].size() == shapes[i].size()) {
      const size_t close = type.find(']');
      const std::string elem = type.substr(12, close == std::string::npos ? std::string::npos : close - 12);
      int64_t total = 0;
      for (size_t k = 0; k < values[i].size(); ++k)
        if (std::optional<EtTensor> t = tensor(values[i][k], shapes[i][k], elem.substr(0, elem.find(',')))) {
          total += t->bytes / DTypeBytes(t->dtype);
          ++arg.tensors;
          tensors.push_back(std::move(*t));
        }
      arg.is_tensor = true;
      arg.shape = {total};
    } else if (strings && values[i].is_string()) {
      strings->push_back(values[i].get<std::string>());
    }
    args.push_back(arg);
  }
}

EtNode EtReader::ReadNode(const json& n, size_t index) const {
  if (!n.is_object()) Fail(index, "expected an object");
  EtNode node;
  if (!n.contains("id")) Fail(index, "id: missing required field");
  node.id = Uint(n["id"], index, "id");
  if (!n.contains("name") || !n["name"].is_string()) Fail(index, "name: missing, or not a string");
  node.name = n["name"].get<std::string>();
  const json* parent = n.contains("parent") ? &n["parent"] : n.contains("ctrl_deps") ? &n["ctrl_deps"] : nullptr;
  if (parent && !parent->is_array()) node.parent = Uint(*parent, index, "ctrl_deps (the parent)");
  if (parent && parent->is_array() && parent->size() == 1) node.parent = Uint((*parent)[0], index, "ctrl_deps");
  if (n.contains("attrs")) {
    if (!n["attrs"].is_array()) Fail(index, "attrs: expected an array of {name, type, value}");
    for (const json& a : n["attrs"])
      if (a.is_object() && a.contains("name") && a["name"].is_string() && a.contains("value"))
        node.attrs[a["name"].get<std::string>()] = &a["value"];
  }
  for (const char* key : {"op_schema", "kernel_backend"}) {  // 1.0.1 keeps them as fields, later schemas as attrs
    const json* v = n.contains(key) ? &n[key] : node.attrs.count(key) ? node.attrs.at(key) : nullptr;
    if (v && v->is_string()) (std::string(key) == "op_schema" ? node.op_schema : node.kernel_backend) = v->get<std::string>();
  }
  static const json kEmpty = json::array();
  size_t first_arg_tensors = 0;  // how many of in_tensors the first argument holds
  for (auto [io, flat_shapes, flat_types, args, tensors] :
       {std::tuple{"inputs", "input_shapes", "input_types", &node.in_args, &node.in_tensors},
        std::tuple{"outputs", "output_shapes", "output_types", &node.out_args, &node.out_tensors}}) {
    if (!n.contains(io)) continue;
    const json& v = n[io];
    std::vector<std::string>* strings = std::string(io) == "inputs" ? &node.strings : nullptr;
    if (v.is_object())
      ReadArgs(v.contains("values") ? v["values"] : kEmpty, v.contains("shapes") ? v["shapes"] : kEmpty,
               v.contains("types") ? v["types"] : kEmpty, index, io, *args, *tensors, strings);
    else
      ReadArgs(v, n.contains(flat_shapes) ? n[flat_shapes] : kEmpty, n.contains(flat_types) ? n[flat_types] : kEmpty,
               index, io, *args, *tensors, strings);
    if (strings && !node.in_args.empty()) first_arg_tensors = node.in_args[0].tensors;
  }
  // An in-place operator (add_, _foreach_mul_) writes its first argument, whether or not it records an output.
  if (node.name.size() > 1 && node.name.back() == '_' && node.name[node.name.size() - 2] != '_')
    node.out_tensors.insert(node.out_tensors.end(), node.in_tensors.begin(), node.in_tensors.begin() + first_arg_tensors);
  return node;
}

// An operator does work of its own: an ATen (or other registered) operator with a schema, a communication call,
// or a compiled (Triton) kernel. c10d:: wrappers are labels: record_param_comms below them is the collective.
bool EtReader::IsOperator(const EtNode& n) const {
  if (IsComm(n)) return true;
  if (n.kernel_backend == "triton") return true;
  return !n.op_schema.empty() && n.name.rfind("c10d::", 0) != 0;
}

// Parents, the outermost operator at or above every node, roles and layers.
void EtReader::Classify() {
  const size_t n = nodes_.size();
  std::unordered_map<uint64_t, int32_t> by_id;
  for (size_t i = 0; i < n; ++i)
    if (!by_id.emplace(nodes_[i].id, static_cast<int32_t>(i)).second)
      Fail(i, "id: duplicate node id " + std::to_string(nodes_[i].id));
  parent_.assign(n, -1);
  size_t dangling = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!nodes_[i].parent || *nodes_[i].parent == nodes_[i].id) continue;
    auto it = by_id.find(*nodes_[i].parent);
    if (it == by_id.end()) ++dangling;
    else parent_[i] = it->second;
  }
  if (dangling > 0)
    warnings_.push_back(source_ + ": " + std::to_string(dangling) + " nodes name a parent that is not in the trace: "
                        "read as top-level nodes");
  // Resolve every node after its ancestors: walk up to a resolved node, then assign down the path.
  outer_.assign(n, -1);
  depth_.assign(n, 0);
  role_.assign(n, OpRole::kForward);
  layer_.assign(n, "");
  std::vector<uint8_t> done(n, 0);
  std::vector<int32_t> path;
  for (size_t start = 0; start < n; ++start) {
    path.clear();
    for (int32_t i = static_cast<int32_t>(start); i >= 0 && !done[i]; i = parent_[i]) {
      if (path.size() > n) Fail(start, "ctrl_deps: the parent chain is a cycle");
      path.push_back(i);
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const int32_t i = *it, p = parent_[i];
      const EtNode& node = nodes_[i];
      outer_[i] = p >= 0 && outer_[p] >= 0 ? outer_[p] : IsOperator(node) ? i : -1;
      depth_[i] = p >= 0 ? depth_[p] + 1 : 0;
      role_[i] = p >= 0 ? role_[p] : OpRole::kForward;
      layer_[i] = p >= 0 ? layer_[p] : "";
      if (node.name.rfind("autograd::engine::evaluate_function", 0) == 0 ||
          node.name.find("Backward") != std::string::npos)
        role_[i] = OpRole::kBackward;
      if (node.name.rfind("Optimizer.", 0) == 0) role_[i] = OpRole::kUpdate;
      if (!IsOperator(node) && node.name.rfind("ProfilerStep#", 0) != 0 && node.name.front() != '[') layer_[i] = node.name;
      done[i] = 1;
    }
  }
}

// The collective of a communication op: attr collective_name (schema 1.1.0), a string argument of
// record_param_comms, or the nccl: name; "" for a wait (no data) and "?" when nothing says.
std::string EtReader::Collective(const EtNode& n) const {
  std::vector<std::string> names;
  if (auto it = n.attrs.find("collective_name"); it != n.attrs.end() && it->second->is_string())
    names.push_back(it->second->get<std::string>());
  names.insert(names.end(), n.strings.begin(), n.strings.end());
  if (n.name != "record_param_comms") names.push_back(n.name);
  for (const std::string& s : names) {
    if (s == "wait" || (s == "barrier" && n.in_tensors.empty())) return "";
    if (std::string c = CollectiveFromName(s); !c.empty()) return c;
    if (s == "send" || s == "recv" || s == "isend" || s == "irecv") return s[0] == 'i' ? s.substr(1) : s;
  }
  return n.in_tensors.empty() && n.out_tensors.empty() ? "" : "?";
}

std::string ShortName(const std::string& name) {
  std::string op = name.substr(name.rfind("::") == std::string::npos ? 0 : name.rfind("::") + 2);
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.pop_back();  // in-place variant
  return op;
}

Expected<ImportResult> EtReader::Import(const std::string& graph_name) {
  const json& list = doc_["nodes"];
  for (size_t i = 0; i < list.size(); ++i) nodes_.push_back(ReadNode(list[i], i));
  if (nodes_.empty()) return Error{source_ + ": the trace has no nodes"};
  Classify();
  std::vector<size_t> order(nodes_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return nodes_[a].id < nodes_[b].id; });
  // Several recorded iterations: keep the ids from the first ProfilerStep# to the next one.
  std::vector<uint64_t> steps;
  for (const EtNode& node : nodes_)
    if (node.name.rfind("ProfilerStep#", 0) == 0) steps.push_back(node.id);
  std::sort(steps.begin(), steps.end());
  const uint64_t lo = steps.size() > 1 ? steps[0] : 0, hi = steps.size() > 1 ? steps[1] : UINT64_MAX;
  if (steps.size() > 1)
    warnings_.push_back(source_ + ": the trace records " + std::to_string(steps.size()) +
                        " iterations (ProfilerStep#): imported the first one");
  // FLOPs: an operator's own formula, or else the sum over what it calls (deepest nodes first).
  std::vector<std::optional<double>> own(nodes_.size());
  std::vector<double> total(nodes_.size(), 0.0), below(nodes_.size(), 0.0);
  std::vector<size_t> bottom_up = order;
  std::stable_sort(bottom_up.begin(), bottom_up.end(), [&](size_t a, size_t b) { return depth_[a] > depth_[b]; });
  for (size_t i : bottom_up) {
    if (IsOperator(nodes_[i]) && !IsComm(nodes_[i]))
      own[i] = AtenFlops(ShortName(nodes_[i].name), nodes_[i].in_args, nodes_[i].out_args);
    total[i] = own[i] ? *own[i] : below[i];
    if (parent_[i] >= 0) below[parent_[i]] += total[i];
  }
  return Build(graph_name, order, lo, hi, own, total);
}

// Bytes a communication op moves: attrs in_msg_nelems x dtype (schema 1.1.0), else its tensor inputs (else
// outputs).
int64_t CommBytes(const EtNode& n) {
  auto count = n.attrs.find("in_msg_nelems");
  auto type = n.attrs.find("dtype");
  DType dtype;
  if (count != n.attrs.end() && type != n.attrs.end() && count->second->is_number_integer() &&
      count->second->get<int64_t>() > 0 && type->second->is_string() &&
      DTypeFromName(type->second->get<std::string>(), &dtype))
    return std::min(kMaxTensorBytes, count->second->get<int64_t>() * DTypeBytes(dtype));
  int64_t bytes = 0;
  for (const auto* list : {&n.in_tensors, &n.out_tensors}) {
    for (const EtTensor& t : *list) bytes = std::min(kMaxTensorBytes, bytes + t.bytes);
    if (bytes > 0) break;
  }
  return bytes;
}

// One op per outermost operator in [lo, hi) (ids), in recording order. Every tensor an op's subtree reads is an
// edge from the op that last wrote it; a tensor first read outside the optimizer (not produced in the trace) and
// later written by the optimizer is a parameter, owned by the first op that read it.
Expected<ImportResult> EtReader::Build(const std::string& graph_name, const std::vector<size_t>& order, uint64_t lo,
                                       uint64_t hi, const std::vector<std::optional<double>>& own,
                                       const std::vector<double>& total) {
  std::vector<std::vector<size_t>> group(nodes_.size());  // the nodes at or below each outermost operator
  for (size_t i : order)
    if (outer_[i] >= 0) group[outer_[i]].push_back(i);
  std::vector<size_t> kept;
  std::vector<std::string> collective(nodes_.size());
  std::map<std::string, int> name_count;
  for (size_t i : order) {
    if (outer_[i] != static_cast<int32_t>(i) || nodes_[i].id < lo || nodes_[i].id >= hi) continue;
    if (IsComm(nodes_[i]) && (collective[i] = Collective(nodes_[i])).empty()) continue;  // a wait: no data
    kept.push_back(i);
    ++name_count[nodes_[i].name];
  }
  if (kept.empty()) return Error{source_ + ": the trace records no operators (only labels)"};
  ImportResult result;
  result.format = "pytorch_et";
  GraphBuilder builder(graph_name);
  std::unordered_map<std::string, OpId> last_writer;
  std::unordered_map<std::string, std::pair<OpId, int64_t>> first_reader;  // tensors read before any write
  std::unordered_set<std::string> updated;
  std::map<std::string, int> no_formula;
  for (size_t i : kept) {
    const EtNode& node = nodes_[i];
    Op op;
    op.name = name_count[node.name] > 1 ? node.name + "#" + std::to_string(node.id) : node.name;
    op.role = role_[i];
    op.layer = layer_[i];
    if (IsComm(node)) {
      op.type = collective[i] == "?" ? "collective" : collective[i];
      if (collective[i] == "?")
        result.warnings.push_back(source_ + ": node " + std::to_string(node.id) + " ('" + node.name +
                                  "'): unknown collective: imported as op type 'collective'");
      if (const int64_t bytes = CommBytes(node); bytes > 0) op.shape = {bytes}, op.dtype = DType::kI8;
    } else {
      op.type = OpTypeFromName(node.name);
      op.flops = total[i];
      if (!own[i] && total[i] == 0) ++no_formula[node.name];
      if (!node.out_tensors.empty() &&
          std::all_of(node.out_tensors[0].shape.begin(), node.out_tensors[0].shape.end(), [](int64_t d) { return d > 0; })) {
        op.shape = node.out_tensors[0].shape;
        op.dtype = node.out_tensors[0].dtype;
      }
    }
    const OpId k = builder.add_op(std::move(op));
    std::map<OpId, int64_t> in_bytes;
    std::unordered_set<std::string> seen;
    for (size_t j : group[i])
      for (const EtTensor& t : nodes_[j].in_tensors) {
        if (!seen.insert(t.key).second) continue;
        if (auto w = last_writer.find(t.key); w != last_writer.end()) {
          if (w->second != k) in_bytes[w->second] = std::min(kMaxTensorBytes, in_bytes[w->second] + t.bytes);
        } else if (role_[j] != OpRole::kUpdate) {  // optimizer state (zero_grad's gradients) is no parameter
          first_reader.emplace(t.key, std::pair{k, t.bytes});
        }
      }
    for (size_t j : group[i])
      for (const EtTensor& t : nodes_[j].out_tensors) {
        last_writer[t.key] = k;
        if (role_[j] == OpRole::kUpdate && first_reader.count(t.key)) updated.insert(t.key);
      }
    for (auto [src, bytes] : in_bytes) builder.add_edge(src, k, bytes);
  }
  for (const std::string& key : updated) {
    auto [op, bytes] = first_reader.at(key);
    builder.mutable_op(op).param_bytes = std::min(kMaxTensorBytes, builder.op(op).param_bytes + bytes);
  }
  if (!no_formula.empty()) {
    std::vector<std::pair<int, std::string>> by_count;
    int ops = 0;
    for (const auto& [name, count] : no_formula) by_count.emplace_back(-count, name), ops += count;
    std::sort(by_count.begin(), by_count.end());
    std::string list;
    for (size_t t = 0; t < by_count.size() && t < 8; ++t)
      list += (t ? ", " : "") + by_count[t].second + " (" + std::to_string(-by_count[t].first) + ")";
    result.warnings.push_back(source_ + ": " + std::to_string(ops) + " ops of " + std::to_string(no_formula.size()) +
                              " operator types have no FLOP formula and count 0 FLOPs: " + list +
                              (by_count.size() > 8 ? ", ..." : ""));
  }
  result.warnings.insert(result.warnings.begin(), warnings_.begin(), warnings_.end());
  Expected<Graph> graph = std::move(builder).Build();
  if (!graph.ok()) return Error{source_ + ": " + graph.error().message};
  result.graph = std::move(*graph);
  result.measured_seconds.assign(result.graph.num_ops(), 0.0);  // host traces record no durations
  return result;
}

}  // namespace

Expected<ImportResult> ImportPyTorchExecutionTrace(const json& doc, const std::string& source,
                                                   const std::string& graph_name) {
  EtReader reader(doc, source);
  try {
    return OneLineMessages(reader.Import(graph_name));
  } catch (const EtError& e) {
    return Error{OneLine(e.message)};
  } catch (const json::exception& e) {
    return Error{OneLine(source + ": " + e.what())};
  }
}

}  // namespace devplace::import_detail

// The binary Chakra reader: a .et file is a stream of protobuf messages (et_def.proto), each preceded by its
// length as a varint: one GlobalMetadata, then one Node per node. Nodes are turned into the JSON objects
// chakra_jsonizer would print (proto field names) and imported by the same code as JSON traces.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "datasets/import/one_line.h"
#include "datasets/import/trace_internal.h"
#include "et_def.pb.h"

namespace devplace {

namespace {

using nlohmann::json;

// Messages larger than this are taken for corruption rather than read.
constexpr uint32_t kMaxMessageBytes = 256u << 20;

template <typename List>
json Values(const List& list) {
  json out = json::array();
  for (const auto& v : list.values()) out.push_back(v);
  return out;
}

json AttrValue(const ChakraProtoMsg::AttributeProto& a) {
  using A = ChakraProtoMsg::AttributeProto;
  switch (a.value_case()) {
    case A::kDoubleVal: return a.double_val();
    case A::kFloatVal: return a.float_val();
    case A::kInt32Val: return a.int32_val();
    case A::kInt64Val: return a.int64_val();
    case A::kUint32Val: return a.uint32_val();
    case A::kUint64Val: return a.uint64_val();
    case A::kSint32Val: return a.sint32_val();
    case A::kSint64Val: return a.sint64_val();
    case A::kFixed32Val: return a.fixed32_val();
    case A::kFixed64Val: return a.fixed64_val();
    case A::kSfixed32Val: return a.sfixed32_val();
    case A::kSfixed64Val: return a.sfixed64_val();
    case A::kBoolVal: return a.bool_val();
    case A::kStringVal: return a.string_val();
    case A::kDoubleList: return Values(a.double_list());
    case A::kFloatList: return Values(a.float_list());
    case A::kInt32List: return Values(a.int32_list());
    case A::kInt64List: return Values(a.int64_list());
    case A::kUint32List: return Values(a.uint32_list());
    case A::kUint64List: return Values(a.uint64_list());
    case A::kSint32List: return Values(a.sint32_list());
    case A::kSint64List: return Values(a.sint64_list());
    case A::kFixed32List: return Values(a.fixed32_list());
    case A::kFixed64List: return Values(a.fixed64_list());
    case A::kSfixed32List: return Values(a.sfixed32_list());
    case A::kSfixed64List: return Values(a.sfixed64_list());
    case A::kBoolList: return Values(a.bool_list());
    case A::kStringList: return Values(a.string_list());
    default: return nullptr;  // bytes values and unset: nothing the importer reads
  }
}

// The node as chakra_jsonizer prints it with proto field names. Names and strings need not be UTF-8 in the binary
// form; invalid bytes are replaced so that the JSON objects stay valid.
json NodeJson(const ChakraProtoMsg::Node& n) {
  auto text = [](const std::string& s) {
    std::string out;
    for (unsigned char c : s) out += c < 0x80 ? static_cast<char>(c) : '?';
    return out;
  };
  json node = {{"id", n.id()}, {"name", text(n.name())}, {"type", static_cast<int>(n.type())},
               {"duration_micros", n.duration_micros()}};
  node["ctrl_deps"] = json(std::vector<uint64_t>(n.ctrl_deps().begin(), n.ctrl_deps().end()));
  node["data_deps"] = json(std::vector<uint64_t>(n.data_deps().begin(), n.data_deps().end()));
  for (auto [key, io] : {std::pair{"inputs", &n.inputs()}, {"outputs", &n.outputs()}})
    node[key] = {{"values", text(io->values())}, {"shapes", text(io->shapes())}, {"types", text(io->types())}};
  json attrs = json::array();
  for (const auto& a : n.attr()) {
    json v = AttrValue(a);
    if (v.is_string()) v = text(v.get<std::string>());
    if (!v.is_null()) attrs.push_back({{"name", text(a.name())}, {"value", std::move(v)}});
  }
  node["attr"] = std::move(attrs);
  return node;
}

}  // namespace

Expected<ImportResult> ImportChakraBinaryTrace(std::string_view bytes, const std::string& source,
                                               const std::string& graph_name, const ImportOptions& /*options*/) {
  // A malformed record makes libprotobuf log to stderr besides failing; the one-line error says it all.
  const google::protobuf::LogSilencer quiet;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX)));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT32_MAX);
  std::vector<json> nodes;
  for (size_t index = 0;; ++index) {
    uint32_t size = 0;
    if (!in.ReadVarint32(&size)) {
      if (in.CurrentPosition() == static_cast<int>(bytes.size())) break;
      return Error{import_detail::OneLine(source + ": record " + std::to_string(index) + ": truncated length prefix")};
    }
    if (size > kMaxMessageBytes || in.CurrentPosition() + static_cast<int64_t>(size) > static_cast<int64_t>(bytes.size()))
      return Error{import_detail::OneLine(source + ": record " + std::to_string(index) + ": length " + std::to_string(size) +
                                          " runs past the end of the file (truncated, or not a Chakra .et trace)")};
    const auto limit = in.PushLimit(static_cast<int>(size));
    bool ok;
    if (index == 0) {
      ChakraProtoMsg::GlobalMetadata meta;
      ok = meta.ParseFromCodedStream(&in);
    } else {
      ChakraProtoMsg::Node node;
      ok = node.ParseFromCodedStream(&in);
      if (ok) nodes.push_back(NodeJson(node));
    }
    if (!ok || !in.ConsumedEntireMessage())
      return Error{import_detail::OneLine(source + ": record " + std::to_string(index) + ": not a valid " +
                                          (index == 0 ? "GlobalMetadata" : "Node") + " message")};
    in.PopLimit(limit);
  }
  if (nodes.empty()) return Error{source + ": the trace has no nodes"};
  return import_detail::ImportChakraNodes(std::move(nodes), source, graph_name.empty() ? "trace" : graph_name, "chakra");
}

}  // namespace devplace

// Helpers shared by the trace importers: JSON documents with a depth limit, op types, dtypes and collectives
// from PyTorch's and Chakra's names.
#include <cctype>
#include <sstream>
#include <utility>

#include "datasets/import/trace_internal.h"

namespace devplace::import_detail {

namespace {

using nlohmann::json;

// Nesting deeper than this is rejected before parsing (the JSON parser recurses).
constexpr int kMaxDepth = 64;

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

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Expected<std::vector<json>> ParseJsonDocuments(std::string_view text, const std::string& source) {
  if (!DepthOk(text)) return Error{source + ": invalid JSON: nested deeper than " + std::to_string(kMaxDepth)};
  std::vector<json> docs;
  // One document (the common case) parses straight from the text; a stream of documents goes through a stream.
  json single = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!single.is_discarded()) {
    docs.push_back(std::move(single));
    return docs;
  }
  std::istringstream in{std::string(text)};
  while (true) {
    in >> std::ws;
    if (in.peek() == std::char_traits<char>::eof()) break;
    json doc;
    try {
      in >> doc;
    } catch (const json::exception& e) {
      return Error{source + ": invalid JSON: " + e.what()};
    }
    docs.push_back(std::move(doc));
  }
  return docs;
}

std::string OpTypeFromName(const std::string& name) {
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

bool DTypeFromName(std::string name, DType* dtype) {
  name = Lower(std::move(name));
  if (name.rfind("tensor(", 0) == 0 && name.back() == ')') name = name.substr(7, name.size() - 8);
  if (name.rfind("c10::", 0) == 0) name = name.substr(5);
  static const std::pair<const char*, DType> kNames[] = {
      {"float", DType::kF32},     {"float32", DType::kF32},   {"half", DType::kF16},       {"float16", DType::kF16},
      {"bfloat16", DType::kBF16}, {"double", DType::kF64},    {"float64", DType::kF64},    {"long", DType::kI64},
      {"int64", DType::kI64},     {"long int", DType::kI64},  {"int", DType::kI32},        {"int32", DType::kI32},
      {"bool", DType::kBool},     {"int8", DType::kI8},       {"uint8", DType::kI8},       {"char", DType::kI8},
      {"signed char", DType::kI8}, {"unsigned char", DType::kI8}, {"byte", DType::kI8}};
  for (const auto& [text, type] : kNames)
    if (name == text) {
      *dtype = type;
      return true;
    }
  return false;
}

std::string CollectiveFromName(const std::string& name) {
  std::string n;
  for (char c : Lower(name))
    if (c != '_' && c != '-' && c != ':' && c != ' ') n += c;
  static const std::pair<const char*, const char*> kKeys[] = {
      {"reducescatter", "reduce_scatter"}, {"allreduce", "all_reduce"}, {"allgather", "all_gather"},
      {"alltoall", "all_to_all"},          {"broadcast", "broadcast"},  {"barrier", "barrier"},
      {"reduce", "reduce"},                {"gather", "gather"},        {"scatter", "scatter"}};
  for (const auto& [key, collective] : kKeys)
    if (n.find(key) != std::string::npos) return collective;
  return "";
}

bool IsPyTorchExecutionTrace(const json& doc) {
  if (!doc.is_object()) return false;
  auto nodes = doc.find("nodes");
  if (nodes == doc.end() || !nodes->is_array()) return false;
  auto schema = doc.find("schema");
  if (schema != doc.end() && schema->is_string()) {
    const std::string& s = schema->get_ref<const std::string&>();
    if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) return true;
  }
  for (const json& n : *nodes) {
    if (!n.is_object()) return false;
    if (n.contains("type")) return false;
    auto ctrl = n.find("ctrl_deps");
    return n.contains("parent") || n.contains("op_schema") || (ctrl != n.end() && ctrl->is_number()) ||
           n.contains("attrs");
  }
  return false;
}

}  // namespace devplace::import_detail

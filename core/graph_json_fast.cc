// The one-pass graph reader (GraphBuilderFromJsonFast): nlohmann's SAX events straight into ops and edges, with
// no JSON document in between. It accepts only what the checked reader (graph_json.cc) accepts and reads it the
// same way; for anything else it gives up and the checked reader reads the text and names the problem.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/graph_json.h"

namespace devplace {
namespace {

// Where the reader is: one entry per open JSON container.
enum class At { kRoot, kOps, kOp, kShape, kDims, kDim, kEdges, kEdge };

// The fields of each object (bit flags, to refuse a repeated key and to check the required ones).
enum RootKey : uint32_t { kFormat = 1, kVersion = 2, kName = 4, kOpsKey = 8, kEdgesKey = 16 };
enum OpKey : uint32_t {
  kOpName = 1, kType = 2, kLayer = 4, kRole = 8, kShapeKey = 16, kDType = 32, kFlops = 64, kParamBytes = 128,
  kColocation = 256, kForwardOp = 512, kDimsKey = 1024
};
enum DimKey : uint32_t { kKind = 1, kOutputAxis = 2, kInputAxis = 4, kSize = 8 };

struct KeyFlag {
  const char* key;
  uint32_t flag;
};
constexpr KeyFlag kRootKeys[] = {
    {"format", kFormat}, {"version", kVersion}, {"name", kName}, {"ops", kOpsKey}, {"edges", kEdgesKey}};
constexpr KeyFlag kOpKeys[] = {{"name", kOpName},         {"type", kType},      {"layer", kLayer},
                               {"role", kRole},           {"shape", kShapeKey}, {"dtype", kDType},
                               {"flops", kFlops},         {"param_bytes", kParamBytes},
                               {"colocation", kColocation}, {"forward_op", kForwardOp}, {"dims", kDimsKey}};
constexpr KeyFlag kDimKeys[] = {{"kind", kKind}, {"output_axis", kOutputAxis}, {"input_axis", kInputAxis}, {"size", kSize}};

// The flag of `key` among `keys`, 0 for an unknown key.
template <size_t N>
uint32_t FlagOf(const std::string& key, const KeyFlag (&keys)[N]) {
  for (const KeyFlag& k : keys)
    if (key == k.key) return k.flag;
  return 0;
}

// nlohmann's SAX interface. Every handler returns false (which stops the parse) at the first thing the checked
// reader would read differently or reject: a value of another JSON type, a float where an integer is read, an
// unknown or repeated key, a value out of its range.
class GraphSax {
 public:
  using Json = nlohmann::json;

  bool null() { return false; }
  bool boolean(bool) { return false; }
  bool binary(Json::binary_t&) { return false; }
  bool number_unsigned(Json::number_unsigned_t v) {
    return v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) && Integer(static_cast<int64_t>(v));
  }
  bool number_integer(Json::number_integer_t v) { return Integer(v); }
  bool number_float(Json::number_float_t v, const std::string&) {
    // Only flops is read as a number; an integer written as a float goes to the checked reader.
    return !stack_.empty() && Top() == At::kOp && field_ == kFlops && Flops(v);
  }
  bool string(std::string& v) { return String(v); }
  bool key(std::string& k) {
    uint32_t field = 0, *seen = nullptr;
    switch (Top()) {
      case At::kRoot: field = FlagOf(k, kRootKeys), seen = &root_seen_; break;
      case At::kOp: field = FlagOf(k, kOpKeys), seen = &op_seen_; break;
      case At::kDim: field = FlagOf(k, kDimKeys), seen = &dim_seen_; break;
      default: return false;
    }
    if (field == 0 || (*seen & field) != 0) return false;
    *seen |= field;
    field_ = field;
    return true;
  }
  bool start_object(std::size_t) {
    if (stack_.empty()) return Push(At::kRoot);
    if (Top() == At::kOps) {
      op_ = Op{};
      op_seen_ = 0;
      return Push(At::kOp);
    }
    if (Top() == At::kDims) {
      dim_ = PartitionDim{};
      dim_seen_ = 0;
      return Push(At::kDim);
    }
    return false;
  }
  bool end_object() {
    const At at = Top();
    stack_.pop_back();
    if (at == At::kOp) {
      if ((op_seen_ & (kOpName | kType | kShapeKey)) != (kOpName | kType | kShapeKey)) return false;
      ops_.push_back(std::move(op_));
    } else if (at == At::kDim) {
      if ((dim_seen_ & (kKind | kSize)) != (kKind | kSize)) return false;
      op_.dims.push_back(dim_);
    } else if (at == At::kRoot) {
      const uint32_t required = kFormat | kVersion | kOpsKey | kEdgesKey;
      if ((root_seen_ & required) != required) return false;
    }
    return Closed();
  }
  bool start_array(std::size_t) {
    if (stack_.empty()) return false;
    switch (Top()) {
      case At::kRoot:
        if (field_ == kOpsKey) return Push(At::kOps);
        if (field_ == kEdgesKey) return Push(At::kEdges);
        return false;
      case At::kOp:
        if (field_ == kShapeKey) return Push(At::kShape);
        if (field_ == kDimsKey) return Push(At::kDims);
        return false;
      case At::kEdges:
        edge_values_ = 0;
        return Push(At::kEdge);
      default:
        return false;
    }
  }
  bool end_array() {
    const At at = Top();
    stack_.pop_back();
    if (at == At::kEdge && edge_values_ != 3) return false;
    return Closed();
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception&) {
    return false;
  }

  // The builder of what was read (after a parse that returned true): std::nullopt when the file has no op or an
  // edge names an op that does not exist (the checked reader's messages say which).
  std::optional<GraphBuilder> Builder() && {
    if (ops_.empty()) return std::nullopt;
    const auto n = static_cast<int64_t>(ops_.size());
    for (const auto& [src, dst, bytes] : edges_)
      if (src >= n || dst >= n) return std::nullopt;
    GraphBuilder builder(root_seen_ & kName ? std::move(name_) : std::string("graph"));
    for (Op& op : ops_) builder.add_op(std::move(op));
    for (const auto& [src, dst, bytes] : edges_)
      builder.add_edge(static_cast<OpId>(src), static_cast<OpId>(dst), bytes);
    return builder;
  }

 private:
  At Top() const { return stack_.back(); }
  bool Push(At at) {
    stack_.push_back(at);
    return true;
  }
  // After a container closes no key is pending: the enclosing object's next value comes after its next key.
  bool Closed() {
    field_ = 0;
    return true;
  }

  bool Integer(int64_t v) {
    if (stack_.empty()) return false;
    switch (Top()) {
      case At::kRoot:
        return field_ == kVersion && v == 1;
      case At::kOp:
        if (field_ == kParamBytes && v >= 0) return op_.param_bytes = v, true;
        return field_ == kFlops && Flops(static_cast<double>(v));
      case At::kShape:
        if (v < 1) return false;
        op_.shape.push_back(v);
        return true;
      case At::kDim:
        if ((field_ == kOutputAxis || field_ == kInputAxis) && v >= -1 && v <= 64) {
          (field_ == kOutputAxis ? dim_.output_axis : dim_.input_axis) = static_cast<int32_t>(v);
          return true;
        }
        if (field_ == kSize && v >= 1) return dim_.size = v, true;
        return false;
      case At::kEdge:
        if (v < 0 || edge_values_ >= 3) return false;
        if (edge_values_ == 0) edges_.emplace_back();
        edges_.back()[edge_values_++] = v;
        return true;
      default:
        return false;
    }
  }
  bool Flops(double v) {
    if (!std::isfinite(v) || v < 0.0) return false;
    op_.flops = v;
    return true;
  }
  bool String(std::string& v) {
    if (stack_.empty()) return false;
    if (Top() == At::kRoot) {
      if (field_ == kFormat) return v == "devplace.graph";
      if (field_ == kName) return name_ = std::move(v), true;
      return false;
    }
    if (Top() == At::kDim) return field_ == kKind && ParseDimKind(v, &dim_.kind);
    if (Top() != At::kOp) return false;
    switch (field_) {
      case kOpName: op_.name = std::move(v); return true;
      case kType: op_.type = std::move(v); return true;
      case kLayer: op_.layer = std::move(v); return true;
      case kRole: return ParseOpRole(v, &op_.role);
      case kDType: return ParseDType(v, &op_.dtype);
      case kColocation: op_.colocation = std::move(v); return true;
      case kForwardOp: op_.forward_op = std::move(v); return true;
      default: return false;
    }
  }

  std::vector<At> stack_;
  uint32_t field_ = 0;  // the key whose value comes next, in the innermost object
  uint32_t root_seen_ = 0, op_seen_ = 0, dim_seen_ = 0;
  std::string name_;
  Op op_;
  PartitionDim dim_;
  std::vector<Op> ops_;
  std::vector<std::array<int64_t, 3>> edges_;  // [src, dst, bytes] as read
  int32_t edge_values_ = 0;
};

}  // namespace

std::optional<GraphBuilder> GraphBuilderFromJsonFast(const std::string& text) {
  GraphSax sax;
  try {
    if (!nlohmann::json::sax_parse(text, &sax)) return std::nullopt;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return std::move(sax).Builder();
}

}  // namespace devplace

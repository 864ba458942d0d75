#include "core/json_reader.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace devplace {

namespace {

// `text` with every control character written as \xNN, so that a message stays one line.
std::string EscapeControl(const std::string& text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out.push_back(c);
      continue;
    }
    static const char* const kHex = "0123456789abcdef";
    out += {'\\', 'x', kHex[u >> 4], kHex[u & 0xf]};
  }
  return out;
}

}  // namespace

InputError::InputError(const std::string& message) : std::runtime_error(EscapeControl(message)) {}

void FailAt(const std::string& source, const std::string& path, const std::string& reason) {
  throw InputError(source + ": " + (path.empty() ? "" : path + ": ") + reason);
}

namespace {
std::string TypeName(const nlohmann::json& v) { return v.type_name(); }
}  // namespace

int64_t ReadInteger(const nlohmann::json& value, const std::string& source, const std::string& path, int64_t min,
                    int64_t max) {
  int64_t result = 0;
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      FailAt(source, path, "integer is too large");
    result = value.get<int64_t>();
  } else if (value.is_number_float()) {
    double d = value.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.2e18)
      FailAt(source, path, "expected an integer, got " + value.dump());
    result = static_cast<int64_t>(d);
  } else {
    FailAt(source, path, "expected an integer, got " + TypeName(value));
  }
  if (result < min) FailAt(source, path, "must be >= " + std::to_string(min) + ", got " + std::to_string(result));
  if (result > max) FailAt(source, path, "must be <= " + std::to_string(max) + ", got " + std::to_string(result));
  return result;
}

std::string ReadString(const nlohmann::json& value, const std::string& source, const std::string& path) {
  if (!value.is_string()) FailAt(source, path, "expected a string, got " + TypeName(value));
  return value.get<std::string>();
}

const nlohmann::json& RequireArray(const nlohmann::json& value, const std::string& source, const std::string& path) {
  if (!value.is_array()) FailAt(source, path, "expected a list, got " + TypeName(value));
  return value;
}

JsonObject::JsonObject(const nlohmann::json& value, std::string source, std::string path)
    : value_(value), source_(std::move(source)), path_(std::move(path)) {
  if (!value_.is_object()) FailAt(source_, path_, "expected an object (key: value pairs), got " + TypeName(value_));
}

std::string JsonObject::path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void JsonObject::fail(const std::string& key, const std::string& reason) const { FailAt(source_, path_of(key), reason); }

bool JsonObject::has(const std::string& key) {
  known_.insert(key);
  return value_.contains(key);
}

const nlohmann::json& JsonObject::required(const std::string& key) {
  known_.insert(key);
  auto it = value_.find(key);
  if (it == value_.end()) fail(key, "missing required field");
  return *it;
}

const nlohmann::json* JsonObject::optional(const std::string& key) {
  known_.insert(key);
  auto it = value_.find(key);
  if (it == value_.end()) return nullptr;
  return &*it;
}

std::string JsonObject::string(const std::string& key) { return ReadString(required(key), source_, path_of(key)); }

std::string JsonObject::string_or(const std::string& key, const std::string& fallback) {
  const nlohmann::json* v = optional(key);
  return v ? ReadString(*v, source_, path_of(key)) : fallback;
}

int64_t JsonObject::integer(const std::string& key, int64_t min, int64_t max) {
  return ReadInteger(required(key), source_, path_of(key), min, max);
}

int64_t JsonObject::integer_or(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  const nlohmann::json* v = optional(key);
  return v ? ReadInteger(*v, source_, path_of(key), min, max) : fallback;
}

double JsonObject::number(const std::string& key, double min) {
  const nlohmann::json& v = required(key);
  if (!v.is_number()) fail(key, "expected a number, got " + TypeName(v));
  double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, "must be finite");
  if (d < min) fail(key, "must be >= " + nlohmann::json(min).dump() + ", got " + v.dump());
  return d;
}

double JsonObject::number_or(const std::string& key, double fallback, double min) {
  return has(key) ? number(key, min) : fallback;
}

bool JsonObject::boolean_or(const std::string& key, bool fallback) {
  const nlohmann::json* v = optional(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(key, "expected true or false, got " + TypeName(*v));
  return v->get<bool>();
}

void JsonObject::finish() const {
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (!known_.count(it.key())) {
      std::string known;
      for (const std::string& k : known_) known += (known.empty() ? "" : ", ") + k;
      fail(it.key(), "unknown field" + (known.empty() ? std::string() : " (expected one of: " + known + ")"));
    }
  }
}

namespace {

// nlohmann's DOM builder plus the path of the value being parsed ("ops[3].flops"), so that a number too large
// for a double, which the parser reports without a location, can name its field.
class PathTrackingParser : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
  using Base = nlohmann::detail::json_sax_dom_parser<nlohmann::json>;

 public:
  PathTrackingParser(nlohmann::json& result, std::string source) : Base(result), source_(std::move(source)) {}

  bool null() { return Value(Base::null()); }
  bool boolean(bool v) { return Value(Base::boolean(v)); }
  bool number_integer(number_integer_t v) { return Value(Base::number_integer(v)); }
  bool number_unsigned(number_unsigned_t v) { return Value(Base::number_unsigned(v)); }
  bool number_float(number_float_t v, const string_t& s) { return Value(Base::number_float(v, s)); }
  bool string(string_t& v) { return Value(Base::string(v)); }
  bool binary(binary_t& v) { return Value(Base::binary(v)); }
  bool start_object(std::size_t n) { return Open(Base::start_object(n), false); }
  bool start_array(std::size_t n) { return Open(Base::start_array(n), true); }
  bool end_object() { return Close(Base::end_object()); }
  bool end_array() { return Close(Base::end_array()); }
  bool key(string_t& k) {
    frames_.back().key = k;
    return Base::key(k);
  }

  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& ex) {
    if constexpr (std::is_same_v<Exception, nlohmann::json::out_of_range>)
      if (ex.id == 406) FailAt(source_, Path(), "number out of range: " + token);
    return Base::parse_error(position, token, ex);
  }

 private:
  struct Frame {
    bool array = false;
    std::string key;   // objects: the member being read
    size_t index = 0;  // arrays: the element being read
  };

  std::string Path() const {
    std::string path;
    for (const Frame& f : frames_) {
      if (f.array) {
        path += '[';
        path += std::to_string(f.index);
        path += ']';
      } else {
        if (!path.empty()) path += '.';
        path += f.key;
      }
    }
    return path;
  }
  bool Value(bool ok) {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return ok;
  }
  bool Open(bool ok, bool array) {
    frames_.push_back(Frame{array, "", 0});
    return ok;
  }
  bool Close(bool ok) {
    frames_.pop_back();
    return Value(ok);
  }

  std::string source_;
  std::vector<Frame> frames_;
};

}  // namespace

nlohmann::json ParseJson(const std::string& text, const std::string& source) {
  try {
    nlohmann::json result;
    PathTrackingParser parser(result, source);
    nlohmann::json::sax_parse(text, &parser);
    return result;
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    auto pos = what.find("parse error");
    throw InputError(source + ": invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos)));
  }
}

namespace {

nlohmann::json ScalarToJson(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted: always a string
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  if (s == "null" || s == "~" || s.empty()) return nullptr;
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (end && *end == '\0' && errno != ERANGE) return static_cast<int64_t>(i);
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (end && *end == '\0' && s.find_first_not_of("0123456789.eE+-") == std::string::npos) return d;
  return s;
}

nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const YAML::Node& item : node) out.push_back(YamlToJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return out;
    }
  }
  return nullptr;
}

}  // namespace

nlohmann::json ParseYamlAsJson(const std::string& text, const std::string& source) {
  try {
    return YamlToJson(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    throw InputError(source + ": line " + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
}

}  // namespace devplace

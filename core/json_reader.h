// Checked access to parsed JSON documents (and YAML converted to JSON) for core's readers: every lookup knows
// its field path, unknown keys are rejected, and failures carry "<source>: <path>: <reason>".
// Internal to core's readers (the public readers return Expected values); other libraries use them via
// the typed structs they produce.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace devplace {

// Thrown inside a reader and turned into an Error at the reader's boundary. The message is kept to one line:
// control characters (from field names or values in the input, e.g. a key holding a newline) read "\xNN".
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message);
};

// One JSON object being read: `source` (file name) and `path` (e.g. "ops[3]") prefix every error.
class JsonObject {
 public:
  // Throws InputError if `value` is not an object.
  JsonObject(const nlohmann::json& value, std::string source, std::string path);

  // Whether `key` is present (the key counts as known to finish()).
  bool has(const std::string& key);
  // The member `key`; throws "missing required field" if absent.
  const nlohmann::json& required(const std::string& key);
  // The member `key`, or nullptr.
  const nlohmann::json* optional(const std::string& key);

  std::string string(const std::string& key);
  std::string string_or(const std::string& key, const std::string& fallback);
  int64_t integer(const std::string& key, int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max());
  int64_t integer_or(const std::string& key, int64_t fallback, int64_t min = std::numeric_limits<int64_t>::min(),
                     int64_t max = std::numeric_limits<int64_t>::max());
  // A finite number >= min.
  double number(const std::string& key, double min = -std::numeric_limits<double>::max());
  double number_or(const std::string& key, double fallback, double min = -std::numeric_limits<double>::max());
  bool boolean_or(const std::string& key, bool fallback);

  // Full path of a member, e.g. "ops[3].shape", for nested readers and messages.
  std::string path_of(const std::string& key) const;
  const std::string& source() const { return source_; }
  // Throws if the object has a key that no lookup asked for ("unknown field (expected one of: ...)").
  void finish() const;
  // Throws InputError "<source>: <path_of(key)>: <reason>".
  [[noreturn]] void fail(const std::string& key, const std::string& reason) const;

 private:
  const nlohmann::json& value_;
  std::string source_, path_;
  std::set<std::string> known_;  // every key a lookup asked for, present or not
};

// Throws InputError "<source>: <path>: <reason>".
[[noreturn]] void FailAt(const std::string& source, const std::string& path, const std::string& reason);
// Reads a JSON number as an int64 in [min, max] (integral values only).
int64_t ReadInteger(const nlohmann::json& value, const std::string& source, const std::string& path,
                    int64_t min = std::numeric_limits<int64_t>::min(), int64_t max = std::numeric_limits<int64_t>::max());
// Reads a JSON string.
std::string ReadString(const nlohmann::json& value, const std::string& source, const std::string& path);
// Throws if `value` is not an array.
const nlohmann::json& RequireArray(const nlohmann::json& value, const std::string& source, const std::string& path);

// Parses JSON text; a syntax error becomes InputError "<source>: invalid JSON: <reason>".
nlohmann::json ParseJson(const std::string& text, const std::string& source);
// Parses YAML text into the same JSON model (plain scalars become numbers/booleans when they look like one);
// a syntax error becomes InputError "<source>: line L: <reason>".
nlohmann::json ParseYamlAsJson(const std::string& text, const std::string& source);

// Runs `read` and converts an InputError into an Error value.
template <class T, class F>
Expected<T> CatchInputErrors(F&& read) {
  try {
    return read();
  } catch (const InputError& e) {
    return Error{e.what()};
  }
}

}  // namespace devplace

// Shared by the libFuzzer targets of devplace's own readers (fuzz/*_reader_fuzzer.cc): every reader, given any
// bytes, returns a value or a one-line Error; a crash, a sanitizer report or a multi-line (or empty) error traps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace devplace::fuzz {

// The fuzzer's bytes as text.
inline std::string Text(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// Traps unless `message` is one non-empty line.
inline void RequireOneLine(const std::string& message) {
  if (message.empty() || message.find('\n') != std::string::npos) __builtin_trap();
}

// Traps when `result` is an error that is not one line; true when it holds a value.
template <class T>
bool Check(const Expected<T>& result) {
  if (!result.ok()) RequireOneLine(result.error().message);
  return result.ok();
}
inline bool Check(const Status& status) {
  if (!status.ok()) RequireOneLine(status.error().message);
  return status.ok();
}

}  // namespace devplace::fuzz

// Internal to the importers: messages are one line, whatever names the input file holds.
#pragma once

#include <string>
#include <utility>

#include "core/status.h"
#include "datasets/import/importers.h"

namespace devplace::import_detail {

// `text` with every control character (newlines included) replaced by a space.
inline std::string OneLine(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return text;
}

// The result with its error message, or its warnings, made one line each.
inline Expected<ImportResult> OneLineMessages(Expected<ImportResult> result) {
  if (!result.ok()) return Error{OneLine(result.error().message)};
  for (std::string& w : result->warnings) w = OneLine(std::move(w));
  return result;
}

}  // namespace devplace::import_detail

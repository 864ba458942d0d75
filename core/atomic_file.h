// Whole-file reads and atomic writes (write a temporary file beside the target, then rename), so that a
// crash or an error never leaves a half-written output.
#pragma once

#include <string>

#include "core/status.h"

namespace devplace {

// Reads the whole file. Error: "<path>: cannot open: <reason>".
Expected<std::string> ReadFile(const std::string& path);
// Writes `contents` to `path` atomically (temp file in the same directory + rename).
Status WriteFileAtomic(const std::string& path, const std::string& contents);

}  // namespace devplace

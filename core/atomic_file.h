// Whole-file reads and atomic writes (write a temporary file beside the target, fsync it, rename it over the
// target, fsync the directory), so that a crash or an error never leaves a half-written or clobbered output.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace devplace {

// The largest input file devplace reads (1 GiB): larger ones are refused before their contents are allocated.
inline constexpr int64_t kMaxInputFileBytes = int64_t{1} << 30;

// Reads the whole file. Errors: "<path>: cannot open: <reason>", "<path>: is a directory", "<path>: read failed",
// "<path>: larger than the 1 GiB limit on input files" (checked on the size before reading, and while reading a
// pipe); `max_bytes` replaces the limit (tests).
Expected<std::string> ReadFile(const std::string& path, int64_t max_bytes = kMaxInputFileBytes);

// Writes `contents` to `path` so that readers see the old contents or the new, never a mix:
//  - a regular file (or a new one) is replaced by a temporary written in the same directory, fsynced and
//    renamed over it; the directory is fsynced after the rename. An existing file keeps its permissions.
//  - a symlink is followed (links to links too): its final target is written as above and the link stays.
//  - a special file (FIFO, character or block device, socket) is opened and written directly, never
//    replaced; a short write (e.g. ENOSPC from /dev/full) is an error.
//  - a directory is refused.
// On failure nothing is left behind (the temporary is removed) and the target is untouched. Errors read
// "<path>: cannot write: <reason>" (or "cannot replace", "is a directory").
Status WriteFileAtomic(const std::string& path, const std::string& contents);

}  // namespace devplace

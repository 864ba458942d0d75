// Whole-file reads and atomic writes (write a temporary file beside the target, fsync it, rename it over the
// target, fsync the directory), so that a crash or an error never leaves a half-written or clobbered output.
#pragma once

#include <string>

#include "core/status.h"

namespace devplace {

// Reads the whole file. Errors: "<path>: cannot open: <reason>", "<path>: is a directory", "<path>: read failed".
Expected<std::string> ReadFile(const std::string& path);

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

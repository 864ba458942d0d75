#include "core/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace devplace {

Expected<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open: " + std::strerror(errno)};
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Error{path + ": read failed"};
  return buffer.str();
}

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return Error{path + ": cannot write: " + std::strerror(errno)};
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      return Error{path + ": write failed: " + std::strerror(errno)};
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    return Error{path + ": cannot replace: " + reason};
  }
  return Status::Ok();
}

}  // namespace devplace

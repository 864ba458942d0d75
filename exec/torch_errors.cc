#include "exec/torch_errors.h"

#include <cctype>
#include <cstdio>
#include <new>
#include <string>

namespace devplace::exec {

namespace {

// "1.50 GiB" for a byte count.
std::string Bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char text[64];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return text;
}

// The number after "allocate " in an allocator message ("you tried to allocate 123 bytes", "Tried to
// allocate 2.00 GiB"), as text with its unit; empty when there is none.
std::string RequestedSize(const std::string& what) {
  const std::string key = "allocate ";
  for (size_t at = what.find(key); at != std::string::npos; at = what.find(key, at + 1)) {
    const size_t start = at + key.size();
    size_t end = start;
    while (end < what.size() && (std::isdigit(static_cast<unsigned char>(what[end])) || what[end] == '.')) ++end;
    if (end == start) continue;  // "can't allocate memory: you tried to allocate 123 bytes"
    const std::string number = what.substr(start, end - start);
    if (what.compare(end, 6, " bytes") == 0) return Bytes(std::stod(number));
    const size_t unit_end = what.find_first_of(" .;)\n", end + 1);
    return number + what.substr(end, unit_end == std::string::npos ? std::string::npos : unit_end - end);
  }
  return "";
}

}  // namespace

std::string DescribeTorchFailure(const std::exception& e, const std::string& device) {
  const std::string what = e.what();
  const bool oom = dynamic_cast<const std::bad_alloc*>(&e) != nullptr ||
                   what.find("not enough memory") != std::string::npos ||
                   what.find("can't allocate memory") != std::string::npos ||
                   what.find("out of memory") != std::string::npos ||
                   what.find("Out of memory") != std::string::npos;
  if (!oom) return what.substr(0, what.find('\n'));
  const std::string size = RequestedSize(what);
  return "out of memory on " + device + (size.empty() ? "" : ": cannot allocate " + size);
}

}  // namespace devplace::exec

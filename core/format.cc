#include "core/format.h"

#include <cmath>
#include <cstdio>

namespace devplace {

namespace {
std::string Printf(const char* format, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value, unit);
  return buffer;
}

// Amounts past the largest unit (or not finite) go in scientific notation, so that e.g. 1e308 FLOPs print as
// "1.000e+308" and not as the 294 digits of 1e293 P.
bool Huge(double value, double limit) { return !std::isfinite(value) || std::fabs(value) >= limit; }
}  // namespace

std::string FormatBytes(double bytes) {
  if (Huge(bytes, 1e6 * 1099511627776.0)) return Printf("%.3e %s", bytes, "B");
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return Printf(u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
}

std::string FormatSeconds(double seconds) {
  if (Huge(seconds, 1e6)) return Printf("%.3e %s", seconds, "s");
  if (seconds >= 1) return Printf("%.3f %s", seconds, "s");
  if (seconds >= 1e-3) return Printf("%.3f %s", seconds * 1e3, "ms");
  return Printf("%.3f %s", seconds * 1e6, "us");
}

std::string FormatCount(double count) {
  if (Huge(count, 1e18)) return Printf("%.3e%s", count, "");
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (std::fabs(count) >= 1000 && u < 5) {
    count /= 1000;
    ++u;
  }
  return Printf(u == 0 ? "%.0f%s" : "%.2f %s", count, units[u]);
}

}  // namespace devplace

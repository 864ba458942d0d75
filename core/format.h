// Human-readable amounts for reports and command output: bytes, seconds and counts with a unit prefix.
#pragma once

#include <string>

namespace devplace {

// Bytes in binary units, e.g. "512 B", "1.50 GiB".
std::string FormatBytes(double bytes);
// Seconds as s, ms or us with three decimals, e.g. "12.300 ms".
std::string FormatSeconds(double seconds);
// A count with a decimal prefix, e.g. "950", "8.21 G".
std::string FormatCount(double count);

}  // namespace devplace

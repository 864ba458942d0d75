// Human-readable amounts for reports and command output: bytes, seconds and counts with a unit prefix; amounts
// past the largest unit (1e6 TiB, 1e6 s, 1e18) and non-finite ones in scientific notation ("1.000e+308").
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

// SHA-256 (FIPS 180-4) of a byte string, for verifying files before they are parsed (training checkpoints).
#pragma once

#include <string>
#include <string_view>

namespace devplace {

// The SHA-256 digest of `data` as 64 lowercase hexadecimal digits.
std::string Sha256Hex(std::string_view data);

}  // namespace devplace

// Helpers shared by the command handlers: turning Error values into the one-line failure the program prints,
// and writing JSON output.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/format.h"  // the commands format amounts with it
#include "core/status.h"

namespace devplace::cli {

// A user-facing failure: main prints "devplace: <message>" on stderr and exits with status 1.
class CliError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Returns the value or throws CliError with the error's message.
template <class T>
T Unwrap(Expected<T> result) {
  if (!result.ok()) throw CliError(result.error().message);
  return std::move(result).value();
}

// Throws CliError if `status` failed.
void Check(const Status& status);

// Prints exactly one JSON object on stdout (the --json contract).
void PrintJson(const nlohmann::json& object);

// `text` with every number longer than 15 characters rewritten as "%.6g" (CLI11's range checks print the
// largest double in full: 309 digits).
std::string ShortenNumbers(const std::string& text);

}  // namespace devplace::cli

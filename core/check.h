// DEVPLACE_CHECK: internal invariants (bugs, not bad input). A failed check throws devplace::InternalError,
// which the command-line program reports as a bug; libraries never exit the process.
#pragma once

#include <stdexcept>
#include <string>

namespace devplace {

// Thrown when an internal invariant is violated: a bug in devplace, never a user-input problem.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void FailCheck(const char* condition, const char* file, int line, const std::string& detail);

}  // namespace devplace

#define DEVPLACE_CHECK(cond, ...)                                                                  \
  do {                                                                                             \
    if (!(cond)) ::devplace::FailCheck(#cond, __FILE__, __LINE__, ::std::string{__VA_ARGS__});    \
  } while (0)

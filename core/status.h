// Error values for bad user input. Bugs are CHECKs (see check.h); input problems come back as an Error
// whose message names the file, the field and what was expected, e.g. "g.json: ops[3].flops: must be >= 0".
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace devplace {

// A one-line, user-facing description of what is wrong with an input.
struct Error {
  std::string message;
};

// Either a value or an Error (a small stand-in for C++23 std::expected).
template <class T>
class Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}          // NOLINT: implicit by design
  Expected(Error error) : state_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  // Precondition: ok().
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // Precondition: !ok().
  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

// Success or an Error, for operations without a result value.
class Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error.message)), failed_(true) {}  // NOLINT: implicit by design
  static Status Ok() { return Status(); }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  // Precondition: !ok().
  Error error() const { return Error{error_}; }

 private:
  std::string error_;
  bool failed_ = false;
};

}  // namespace devplace

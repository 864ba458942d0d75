// One spelling of LibTorch's warning-handler interface across the versions devplace builds against: Debian's
// LibTorch 1.13 (c10::Warning::..., process(where, message, verbatim)) and PyTorch 2.x wheels used by the CUDA
// build (c10::WarningUtils::..., process(const Warning&)).
#pragma once

#include <c10/util/Exception.h>
#include <torch/version.h>

#include <string>

namespace devplace::torch_warnings {

#if TORCH_VERSION_MAJOR >= 2
using Guard = c10::WarningUtils::WarningHandlerGuard;  // installs a handler for its lifetime, then restores
inline c10::WarningHandler* Current() { return c10::WarningUtils::get_warning_handler(); }
inline bool WarnAlways() { return c10::WarningUtils::get_warnAlways(); }
inline void SetWarnAlways(bool always) { c10::WarningUtils::set_warnAlways(always); }
#else
using Guard = c10::Warning::WarningHandlerGuard;  // installs a handler for its lifetime, then restores
inline c10::WarningHandler* Current() { return c10::Warning::get_warning_handler(); }
inline bool WarnAlways() { return c10::Warning::get_warnAlways(); }
inline void SetWarnAlways(bool always) { c10::Warning::set_warnAlways(always); }
#endif

// A warning handler that sees each warning's text: Keep(message) decides whether it is passed on to `next` (when
// `next` is not null).
class MessageHandler : public c10::WarningHandler {
 public:
  explicit MessageHandler(c10::WarningHandler* next) : next_(next) {}
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning& warning) override {
    if (Keep(warning.msg()) && next_) next_->process(warning);
  }
#else
  void process(const c10::SourceLocation& where, const std::string& message, bool verbatim) override {
    if (Keep(message) && next_) next_->process(where, message, verbatim);
  }
#endif

 protected:
  virtual bool Keep(const std::string& message) = 0;

 private:
  c10::WarningHandler* next_;
};

}  // namespace devplace::torch_warnings

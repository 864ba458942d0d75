#include "core/check.h"

namespace devplace {

void FailCheck(const char* condition, const char* file, int line, const std::string& detail) {
  std::string message = std::string("internal error: check failed: ") + condition + " at " + file + ":" +
                        std::to_string(line);
  if (!detail.empty()) message += " (" + detail + ")";
  throw InternalError(message);
}

}  // namespace devplace

#include "apps/cli_util.h"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace devplace::cli {

void Check(const Status& status) {
  if (!status.ok()) throw CliError(status.error().message);
}

void PrintJson(const nlohmann::json& object) { std::cout << object.dump(2) << std::endl; }

}  // namespace devplace::cli

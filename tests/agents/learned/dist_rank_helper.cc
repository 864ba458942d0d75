// One rank of a training group, for learn_test's multi-process tests (tests/agents/learned/distributed_test.cc):
//   dist_rank_helper CONFIG RUN_DIR ITERATIONS TIMEOUT_SECONDS [--resume]
// reads the group from the environment as `devplace train` does, trains up to ITERATIONS iterations of this
// call, and exits 0, or 1 with the error on stderr.
#include <cstdlib>
#include <iostream>
#include <string>

#include "distributed/config.h"
#include "agents/learned/learning.h"

int main(int argc, char** argv) {
  if (argc < 5 || argc > 6 || (argc == 6 && std::string(argv[5]) != "--resume")) {
    std::cerr << "usage: dist_rank_helper CONFIG RUN_DIR ITERATIONS TIMEOUT_SECONDS [--resume]\n";
    return 2;
  }
  devplace::Expected<std::optional<devplace::DistributedConfig>> group = devplace::DistributedConfigFromEnv(
      [](const char* name) -> const char* { return std::getenv(name); }, std::stod(argv[4]));
  if (!group) {
    std::cerr << group.error().message << "\n";
    return 1;
  }
  devplace::TrainOptions options;
  options.config_path = argv[1];
  options.run_dir = argv[2];
  options.max_iterations = std::stoll(argv[3]);
  options.resume = argc == 6;
  options.distributed = *group;
  devplace::Expected<devplace::TrainSummary> trained = devplace::TrainPolicy(options);
  if (!trained) {
    std::cerr << trained.error().message << "\n";
    return 1;
  }
  return 0;
}

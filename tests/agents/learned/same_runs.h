// Comparing two training runs of the learning tests (resume, rollout threads, warm starts).
#pragma once

#include <string>

#include "agents/learned/learning.h"

namespace devplace::learntest {

// RUN/log.csv without its last column (wall time), which no two runs share.
std::string LogWithoutWallTime(const std::string& path);

// Expects two runs of the experiment `config` to end with the same checkpoint (parameters, RNG state, best
// table) and the same log apart from wall times.
void ExpectSameRuns(const TrainSummary& a, const TrainSummary& b, const std::string& config);

// Whether the parameters of the checkpoints in `a` and `b` (policies of the experiment `config`) are equal, bit for
// bit.
bool SameParameters(const std::string& a, const std::string& b, const std::string& config);

}  // namespace devplace::learntest

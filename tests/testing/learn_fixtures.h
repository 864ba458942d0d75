// The learning tests' fixtures: a small MLP graph and two-device machine, games over them, a tiny experiment file,
// a tiny policy and scratch folders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/experiment_config.h"
#include "core/graph.h"
#include "core/topology.h"
#include "env/config.h"
#include "env/game.h"

namespace devplace::learntest {

// Training graph of an MLP with `layers` (matmul with parameters, then relu) after an input; every op has a batch
// of 64 as a sample dimension.
Graph MlpTrainingGraph(int layers);
// Two devices joined both ways; device 1 is `speedup` times faster than device 0; `memory_bytes` each.
Topology TwoDevices(double speedup, int64_t memory_bytes = int64_t{1} << 34);
// The game of `graph` on `topology` (analytic cost model) under `kind`, with or without the data-parallel action;
// fails the test on error.
std::shared_ptr<const PlacementGame> MakeGame(Graph graph, Topology topology, MdpKind kind,
                                              bool memory_aware_mask = true, bool data_parallel_action = false);
// Writes a tiny experiment (2 ptb members on dgx1-v100, one held out) to `dir`/exp.yaml (creating `dir`) and returns
// its path. Each edit (from, to) then replaces the first occurrence of `from` in the text; a missing one fails the
// test.
std::string WriteTinyExperiment(const std::string& dir, int iterations,
                                const std::vector<std::pair<std::string, std::string>>& edits = {});
// A small policy of `kind` (transformer or placeto) for up to 4 devices, fast to train in tests.
PolicyConfig TinyPolicy(const std::string& kind, int32_t segment = 8);
// A fresh empty temporary directory for `name`.
std::string TempDir(const std::string& name);

}  // namespace devplace::learntest

// Turning an experiment config into environments (LibTorch-free part of devplace_learn).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "core/status.h"
#include "env/config.h"
#include "env/game.h"

namespace devplace {

struct LabelledGame {
  std::shared_ptr<const PlacementGame> game;
  std::string label;  // "<graph label>@<topology name>"
};

// One game per (topology, graph) pair, topology-major, with the default analytic cost model. Errors name the
// graph or topology; a topology with more devices than policy.max_devices is an error.
Expected<std::vector<LabelledGame>> MakeExperimentGames(const ExperimentConfig& config,
                                                        const std::vector<GraphSource>& graphs);

}  // namespace devplace

// The simple baselines: everything on one device, data parallelism, round-robin, and random placement. They
// place colocation groups (core/colocation.h), so their output always respects colocation.
#pragma once

#include "agents/search.h"

namespace devplace {

// Every op on the single fastest device (highest f32 peak; ties go to the lowest id). No simulations.
class SingleDevicePlacer : public SearchAlgorithm {
 public:
  std::string name() const override { return "single"; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override;
};

// Data parallelism over every device: each colocation group split over all devices (core/strategy.h
// SplitConfig: along the sample dimension where the op has one, so weights are replicated and gradients
// all-reduced; update ops shard). A group with a member that cannot be split that many ways runs whole on the
// fastest device, as SingleDevicePlacer places it. No simulations.
class DataParallelPlacer : public SearchAlgorithm {
 public:
  std::string name() const override { return "data-parallel"; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override;
};

// Colocation groups dealt to devices 0, 1, 2, ... in topological order of the groups. No simulations.
class RoundRobinPlacer : public SearchAlgorithm {
 public:
  std::string name() const override { return "round-robin"; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override;
};

// Each colocation group on a device drawn uniformly at random (seeded). Without a budget it draws one placement
// and runs no simulation; with a budget it draws placements until the budget is spent (at least one) and
// returns the one with the shortest simulated step time (random search).
class RandomPlacer : public SearchAlgorithm {
 public:
  std::string name() const override { return "random"; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override;
};

}  // namespace devplace

// auto-shard (issue 17): a Metropolis-Hastings search over sharding annotations instead of per-op configs. A state
// is a device mesh (a shape over the topology's devices), the mesh axis the data is split over (or none), the ZeRO
// stage over it (none; 1: weight updates sharded; 3: weights and gradients too), and for every group of weights
// (forward ops with parameters whose names differ only in their digits, i.e. the same weight in every layer) a split:
// none, column-parallel (its output features over the model axis) or row-parallel (its contracted axis over the model
// axis, a partial sum). The state's annotations are propagated to every op (core/sharding_propagation.h), lowered,
// and simulated; the best state by the objective (sim/objective.h: fits before OOM, then step time) is kept.
#pragma once

#include <cstdint>
#include <string>

#include "agents/search.h"

namespace devplace {

// Settings of the auto-shard search.
struct AutoShardOptions {
  // Mesh shape laid over the topology's first devices ("8", "2x4"; over fast links, MeshFromShorthand in core/mesh.h);
  // empty: the chain also moves between the 1-D mesh of all devices and every 2-D shape R x C of them (R, C > 1).
  std::string mesh;
  // Acceptance of a worse proposal: min(1, exp(beta * (cost(S) - cost(S*)) / cost(S0))), costs relative to the
  // chain's start S0, penalised for OOM with `oom_penalty` (sim/objective.h StepCost::Penalised), as in McmcSearch.
  double beta = 200.0;
  double oom_penalty = 10.0;
  // Evaluations used when the request sets no budget at all.
  int64_t default_evaluations = 200;
  // A proposal that changes the configs of at most this fraction of the ops is priced by delta simulation of the
  // current strategy (sim/simulator.h DeltaSimulator); larger changes (a mesh change, a weight group spanning every
  // layer) by a full simulation.
  double delta_fraction = 0.05;
};

// Starts the chain from data parallelism over the first axis of its first mesh (every input's batch split, weights
// replicated); when request.initial is given it is evaluated first and returned unless something ranks better, so
// the search is never worse than the strategy it refines (e.g. the best shipped spec lowered by `devplace shard`).
// Each proposal changes one part of the state (the mesh, the data axis, ZeRO, or one weight group's split); proposals
// whose annotations do not propagate or lower (a split that does not divide) are skipped without an evaluation.
// Deterministic for a seed. Errors: a mesh shape that does not parse or needs more devices than the topology has.
class AutoShardSearch : public SearchAlgorithm {
 public:
  explicit AutoShardSearch(AutoShardOptions options = {}) : options_(std::move(options)) {}
  std::string name() const override { return "auto-shard"; }
  bool refines_initial() const override { return true; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override;

 private:
  AutoShardOptions options_;
};

}  // namespace devplace

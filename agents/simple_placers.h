// The simple baselines: everything on one device, data parallelism, round-robin, and random placement. They
// place colocation groups (core/colocation.h), so their output always respects colocation.
#pragma once

#include "agents/search.h"

namespace devplace {

// Each function is the search registered under the name that starts its comment (agents/search_registry.cc wraps
// it in a FunctionSearch); call it through SearchAlgorithm::Search, which checks the problem first.

// "single": Every op on the single fastest device (highest f32 peak; ties go to the lowest id). No simulations.
Expected<SearchResult> PlaceOnSingleDevice(const SearchProblem& problem, const SearchRequest& request);

// "data-parallel": Data parallelism over every device: each colocation group split over all devices (core/strategy.h
// SplitConfig: along the sample dimension where the op has one, so weights are replicated and gradients
// all-reduced; update ops shard), the devices in FastRingOrder (core/device_order.h) as NCCL orders its rings, so
// the gradient all-reduce runs over fast links (on a DGX-1: 0 1 2 3 7 5 6 4, all NVLink). A group with a member
// that cannot be split that many ways runs whole on the fastest device, as PlaceOnSingleDevice places it. No
// simulations.
Expected<SearchResult> PlaceDataParallel(const SearchProblem& problem, const SearchRequest& request);

// "round-robin": Colocation groups dealt to devices 0, 1, 2, ... in topological order of the groups. No simulations.
Expected<SearchResult> PlaceRoundRobin(const SearchProblem& problem, const SearchRequest& request);

// "random": Each colocation group on a device drawn uniformly at random (seeded). Without a budget it draws one
// placement and runs no simulation; with a budget it draws placements until the budget is spent (at least one) and
// returns the one with the shortest simulated step time (random search).
Expected<SearchResult> PlaceRandomly(const SearchProblem& problem, const SearchRequest& request);

}  // namespace devplace

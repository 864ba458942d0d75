// The human-expert baseline: what practitioners do by hand for GNMT or Inception (and what the Placeto and GDP
// papers compare against). The graph's layers (Op::layer, in the order their forward ops run) are split into
// contiguous runs, one run per device, balanced by compute time and respecting each device's memory.
#pragma once

#include "agents/search.h"

namespace devplace {

// Each function is the search registered under the name that starts its comment (agents/search_registry.cc wraps
// it in a FunctionSearch); call it through SearchAlgorithm::Search, which checks the problem first.

// "expert": For every device count k = 1..D it splits the layer sequence over devices 0..k-1 so that the slowest
// device's compute (layers' forward, backward and update ops, scaled by device speed) is minimal subject to memory
// (binary search on the bound with a greedy fill, optimal for contiguous splits), simulates each split and keeps the
// fastest that fits in memory, as an expert trying 1, 2, ... GPUs would. Uses D evaluations. Layers are keyed by
// Op::layer; ops with no layer follow their colocation group or stand alone.
Expected<SearchResult> PlaceLikeAnExpert(const SearchProblem& problem, const SearchRequest& request);

}  // namespace devplace

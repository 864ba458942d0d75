// Baechi's memory-constrained placers (Jeon et al., "Baechi: Fast Device Placement of Machine Learning Graphs",
// SoCC 2020): m-TOPO and m-ETF. Both place colocation groups as units and never put more on a device than its
// memory holds while another device still has room (memory per op from sim/estimates.h).
#pragma once

#include "agents/search.h"

namespace devplace {

// Each function is the search registered under the name that starts its comment (agents/search_registry.cc wraps
// it in a FunctionSearch); call it through SearchAlgorithm::Search, which checks the problem first.

// "m-topo": m-TOPO: walks the groups in topological order and fills devices one after another, each up to an equal
// share of the graph's total memory (capped by the device's capacity), so the memory load is balanced and every
// device holds a contiguous stretch of the topological order. No simulations.
Expected<SearchResult> PlaceMTopo(const SearchProblem& problem, const SearchRequest& request);

// "m-etf": m-ETF: earliest-task-first list scheduling. Repeatedly picks, among the ops whose predecessors are
// scheduled, the (op, device) pair that can start earliest (device free time vs. arrival of inputs over the
// topology's routes, estimated by Topology::transfer_time_estimate), restricted to devices with memory left for the
// op's group; a group's later ops follow its first. No simulations.
Expected<SearchResult> PlaceMEtf(const SearchProblem& problem, const SearchRequest& request);

}  // namespace devplace

// Graph-partitioning baselines, as Placeto and GDP compare against: the graph of colocation groups (vertex
// weight = compute time, edge weight = bytes exchanged) is cut into one part per device.
#pragma once

#include "agents/search.h"

namespace devplace {

// Each function is the search registered under the name that starts its comment (agents/search_registry.cc wraps
// it in a FunctionSearch); call it through SearchAlgorithm::Search, which checks the problem first.

// "scotch": Scotch static mapping (Pellegrini; Debian's libscotch 7): the target architecture is built from the
// topology (a complete graph of the devices, edge weights = time to move 1 MiB over the route, vertex weights =
// relative device speed) and SCOTCH_graphMap maps the group graph onto it, minimising communication x distance under
// load balance. Runs in a Scotch context of its own (deterministic option, RNG seeded from the search seed). No
// simulations.
Expected<SearchResult> PlaceWithScotch(const SearchProblem& problem, const SearchRequest& request);

// "metis": METIS k-way partitioning (Karypis & Kumar; Debian's libmetis 5): METIS_PartGraphKway over the group graph
// with target part weights proportional to device speed; part i goes to device i. Seeded through
// METIS_OPTION_SEED. No simulations.
Expected<SearchResult> PlaceWithMetis(const SearchProblem& problem, const SearchRequest& request);

}  // namespace devplace

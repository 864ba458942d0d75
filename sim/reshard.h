// Pricing cross-mesh resharding (core/reshard.h) on the simulator's links: every unit task is carried by its
// method's sends and collectives (sim/collectives.h), all in one task graph, so tasks sharing a link contend for it;
// the simulated time is the last arrival. Balancers choose each task's sender and the issue order
// (docs/simulator.md, "Collectives and resharding").
#pragma once

#include <cstdint>
#include <vector>

#include "core/reshard.h"
#include "core/status.h"
#include "core/topology.h"
#include "sim/simulator.h"

namespace devplace {

struct ReshardOptions {
  ReshardMethod method = ReshardMethod::kBroadcast;
  ReshardBalance balance = ReshardBalance::kOurs;
  int32_t broadcast_chunks = 32;     // chunks a broadcast cuts each slice into (>= 1)
  int32_t random_trials = 16;        // orders tried by kRandomGreedy (>= 1)
  int64_t dfs_node_limit = 200000;   // search nodes kDfs may visit before keeping its best so far
  uint64_t seed = 0;                 // kRandomGreedy's generator
  SimOptions sim;                    // segmenting of multi-hop sends
};

struct ReshardResult {
  ReshardPlan plan;
  ReshardBalance chosen = ReshardBalance::kNaive;  // for kOurs: the balancer whose plan was kept
  double seconds = 0.0;                            // simulated time of the plan on an idle machine
  int64_t slice_bytes = 0;                         // total bytes of the unit tasks (each counted once)
  int64_t bytes_moved = 0;                         // bytes injected into the first hop of every send
  int32_t max_receivers = 0;                       // the most receivers of one unit task
};

// Simulated seconds of carrying `tasks` as `plan` says (plan.sender[i] among tasks[i].senders, plan.order a
// permutation), and the bytes moved. Errors when the plan does not fit the tasks or the horizon is too long.
Expected<double> SimulateReshardPlan(const Topology& topology, const std::vector<UnitTask>& tasks,
                                     const ReshardPlan& plan, const ReshardOptions& options,
                                     int64_t* bytes_moved = nullptr);

// Chooses senders and order with options.balance for options.method and prices the plan. Deterministic for a seed.
// Errors on invalid options (chunks, trials) or an empty task without holders.
Expected<ReshardResult> PlanReshard(const Topology& topology, const std::vector<UnitTask>& tasks,
                                    const ReshardOptions& options);

}  // namespace devplace

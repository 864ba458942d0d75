// Collectives as tasks on the topology's links (docs/simulator.md, "Collectives and resharding"). A CommBuilder
// fills a standalone TaskGraph with per-hop transfer tasks (one FIFO resource per link direction, as everywhere in
// the simulator), so collectives built into the same graph contend for links; the Engine then times it. Keys equal
// task ids (creation order breaks ties), so the order in which collectives are added is their priority.
//
// Every collective takes, per member, the tasks whose end makes that member's input available (`Ready`; empty: at
// time 0) and returns, per member, the tasks whose end (plus their link's latency) completes it there. On an idle
// machine with one direct link of bandwidth B and latency a between ring neighbours, over n members and S bytes,
// where every step also pays the link's per-step cost, c = step_cost (instead of a transfer's message_cost):
//   all-gather (S = the gathered tensor)   (n-1)(a + c + S/(nB))
//   reduce-scatter (S = each input)        (n-1)(a + c + S/(nB))
//   all-reduce                             2(n-1)(a + c + S/(nB))
//   all-to-all (S = each member's input)   a + c + S/(nB) on a fully connected machine (pairwise: member i sends
//                                          S/n to each other member; the sends share only the links their routes
//                                          share; c once when the links are distinct, as the rounds run in parallel)
//   chunked ring broadcast, C chunks       (C + n - 2)(c + S/(CB)) + (n-1)a  over the chain root -> r1 -> ...
// A plain Send pays the per-message cost only (a transfer, not a collective step).
// Routes of two or more links are cut into pipelined segments (SimOptions::segment_bytes, max_segments) as in the
// placement task graph.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/topology.h"
#include "sim/engine.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace devplace::sim {

// Tasks whose ends a step waits for (empty: ready at time 0).
using Ready = std::vector<int32_t>;

// How a CommBuilder adds to its task graph.
struct CommOptions {
  // Start an empty single-group graph (ResetSingleGroup); else append to the graph's tasks and dependencies (its
  // resources set, its tasks keyed by id), e.g. a pipeline's stage all-reduce.
  bool fresh = true;
  // Cut sends over routes of two or more links into pipelined segments; else one task per hop.
  bool segmented = true;
  // Called with every new task's id, for builders that keep per-task data of their own.
  std::function<void(int32_t)> on_task;
};

class CommBuilder {
 public:
  // Builds into `tg` over `topology`'s devices and links (keeps references to the first three, a copy of `comm`).
  CommBuilder(const Topology& topology, const SimOptions& options, TaskGraph* tg, const CommOptions& comm = {});

  // A transfer of `bytes` (> 0) from `src` to `dst` (different devices) after `after`; returns the last hops of its
  // segments (all of them deliver the data).
  Ready Send(DeviceId src, DeviceId dst, int64_t bytes, const Ready& after) {
    return Hops(src, dst, bytes, after, false);
  }
  // Ring collectives hold each step's received bytes on the receiver from its last hop (mem_bytes / mem_device).
  // Ring all-gather: member i holds shard i (`bytes` / n of the gathered tensor) after after[i]; every member ends
  // with all shards. n - 1 steps of bytes / n around the members' order (member i sends to member i + 1).
  std::vector<Ready> AllGather(const std::vector<DeviceId>& members, int64_t bytes, const std::vector<Ready>& after);
  // Ring reduce-scatter of a `bytes` tensor held (as a partial sum) by every member: n - 1 steps of bytes / n.
  std::vector<Ready> ReduceScatter(const std::vector<DeviceId>& members, int64_t bytes,
                                   const std::vector<Ready>& after);
  // Ring all-reduce: reduce-scatter then all-gather, 2(n - 1) steps of bytes / n.
  std::vector<Ready> AllReduce(const std::vector<DeviceId>& members, int64_t bytes, const std::vector<Ready>& after);
  // Pairwise all-to-all: every member sends bytes / n of its `bytes` to every other member once its own input is
  // ready, in rounds: in round k (1..n-1) member i sends to member i + k (the round order is the send priority).
  std::vector<Ready> AllToAll(const std::vector<DeviceId>& members, int64_t bytes, const std::vector<Ready>& after);
  // Pipelined chunked broadcast of `bytes` from `root` along the chain root -> receivers[0] -> receivers[1] ...,
  // cut into `chunks` (>= 1) chunks: a receiver forwards chunk c once it has it. Returns, per receiver, the
  // arrival of its last chunk (chunks arrive in order on each hop).
  std::vector<Ready> Broadcast(DeviceId root, const std::vector<DeviceId>& receivers, int64_t bytes, int32_t chunks,
                               const Ready& after);
  // All-reduce over members spanning hosts: reduce-scatter inside each host, all-reduce of each shard among the
  // members with the same index in their host, all-gather inside each host. Every host must hold the same number of
  // members; with one host (or one member per host) it is the ring all-reduce.
  std::vector<Ready> HierarchicalAllReduce(const std::vector<DeviceId>& members, int64_t bytes,
                                           const std::vector<Ready>& after);

  // Builds the adjacency; call once after the last collective.
  void Finish();
  // Times the finished graph on an idle machine: the last arrival (task end plus its link's latency), in seconds.
  // Errors when the total of all task times is too long to simulate (CheckHorizon).
  Expected<double> Run(Engine* engine);

 private:
  int32_t NewTask(int32_t resource, Time duration, int64_t bytes);
  // Send's tasks; `step`: a step of a collective (its hops also pay the links' per-step cost).
  Ready Hops(DeviceId src, DeviceId dst, int64_t bytes, const Ready& after, bool step);
  void Dep(int32_t from, int32_t to);
  // One ring pass of `steps` steps in which member i sends `chunk(i, k)` bytes to member i + 1 in step k after what
  // it received in step k - 1 (and, in step 0 and, when `own_until` > k, its own input).
  std::vector<Ready> RingSteps(const std::vector<DeviceId>& members, int64_t bytes, int32_t steps, int32_t own_until,
                               const std::vector<Ready>& after);

  const Topology& topology_;
  const SimOptions& options_;
  TaskGraph& tg_;
  const CommOptions comm_;
};

}  // namespace devplace::sim

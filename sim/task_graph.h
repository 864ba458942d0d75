// The task graph (internal to sim/): compute tasks per op part, transfer segments per hop, collective steps,
// stored as structs of arrays. Tasks are grouped: group o (< num_ops) holds op o's compute tasks and collective
// steps, group num_ops + e holds the transfers of edge e. Changing op o's config rebuilds group o and the groups
// of o's edges only. A task's tie-break key (group << 32 | index in group) is canonical: it does not depend on
// where the task is stored, so a rebuilt group keeps the keys a full build would give it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/graph.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "sim/cost_model.h"
#include "sim/partition.h"
#include "sim/simulator.h"

namespace devplace::sim {

// Simulated time in integer picoseconds: sums are exact and associative, so a delta run that shifts part of a
// schedule reproduces a full run bit for bit. (2^62 ps is about 53 days.)
using Time = int64_t;
inline constexpr double kSecondsPerTick = 1e-12;
// Longest total of task times and latencies a simulation accepts (keeps every time far from overflow).
inline constexpr double kMaxHorizonSeconds = 4e6;
// Where sums of ticks saturate (beyond kMaxHorizonSeconds, so a saturated sum is always rejected).
inline constexpr Time kHorizonCap = Time{1} << 62;
// Ticks of a task lasting `seconds`: rounded to the nearest tick, at least one (every task takes time).
inline Time ToTicks(double seconds) {
  const double ticks = seconds / kSecondsPerTick + 0.5;
  if (!(ticks < 4.6e18)) return Time{1} << 62;  // absurd; the horizon check rejects it
  return ticks < 1 ? 1 : static_cast<Time>(ticks);
}
inline Time LatencyTicks(double seconds) { return static_cast<Time>(seconds / kSecondsPerTick + 0.5); }
// Segments a transfer of `bytes` (> 0) over a route of `hops` links is cut into: one for a single link, else about
// bytes / options.segment_bytes, between 1 and min(options.max_segments, bytes). Shared by every task builder.
inline int64_t SegmentCount(int64_t bytes, int64_t hops, const SimOptions& options) {
  if (hops < 2) return 1;
  const int64_t segments = (bytes + options.segment_bytes - 1) / options.segment_bytes;
  return std::clamp<int64_t>(segments, 1, std::min<int64_t>(options.max_segments, bytes));
}
// floor(total * part / whole) without overflow: the bytes of the share part / whole of `total` bytes.
inline int64_t ScaleBytes(int64_t total, int64_t part, int64_t whole) {
  return static_cast<int64_t>(static_cast<__int128>(total) * part / whole);
}

// What one hop of a transfer over link `l` towards device `dst` occupies, and for how long it carries `bytes`: the
// link, for bytes / bandwidth (its latency is the link resource's delay after the hop); or, over a link of kind
// "memcpy" (CPU cores sharing memory: the consuming core copies, as the executor's CPU backend does), the core
// `dst` itself for latency + bytes / bandwidth, so that copies and collective steps take that core's time from
// its ops (docs/simulator.md, "Copies between CPU cores"). Either way a hop of a transfer also takes the link's
// per-message cost, and a hop of a collective step (`step`) the link's per-step cost instead and moves its bytes at
// the link's step bandwidth when one is set ("Per-message and per-step costs": between processes the executor runs
// collectives on the process group, not as messages).
struct HopCost {
  int32_t resource = 0;
  double seconds = 0.0;
};
inline HopCost HopOf(const Topology& topology, LinkId l, DeviceId dst, double bytes, bool step = false) {
  const Link& link = topology.link(l);
  const double fixed = step ? link.step_cost : link.message_cost;
  const double bandwidth = step && link.step_bandwidth > 0 ? link.step_bandwidth : link.bandwidth;
  if (link.kind == "memcpy") return {dst, link.latency + fixed + bytes / bandwidth};
  return {topology.num_devices() + l, fixed + bytes / bandwidth};
}

enum class TaskKind : uint8_t { kCompute = 0, kTransfer = 1, kCollective = 2 };

struct TaskGraph {
  int32_t num_devices = 0;
  int32_t num_resources = 0;            // devices, then one per link
  std::vector<Time> resource_delay;     // latency added after a task on the resource ends (links), 0 for devices

  // Per task.
  std::vector<int32_t> resource;
  std::vector<Time> duration;
  std::vector<uint64_t> key;
  std::vector<TaskKind> kind;
  std::vector<uint8_t> first_hop;       // 1 for the first hop of a transfer or collective step
  std::vector<uint8_t> alive;           // 0 once a rebuild replaced the task's group
  std::vector<int32_t> op;              // compute: the op; transfer: producer; collective: the op served
  std::vector<int32_t> part;            // part of `op`
  std::vector<int32_t> consumer;        // transfers: consuming op, else -1
  std::vector<int64_t> bytes;           // bytes moved by this hop (transfers, collective steps)
  std::vector<int64_t> mem_bytes;       // buffer the task allocates at its start (0: none)
  std::vector<int32_t> mem_device;      // device holding that buffer
  std::vector<uint8_t> fallback;        // compute tasks priced analytically by a profiled model
  // Adjacency: task t's successors are succ_pool[succ_off[t] .. succ_off[t] + succ_cnt[t]); preds likewise.
  std::vector<int32_t> succ_off, succ_cnt, pred_off, pred_cnt;
  std::vector<int32_t> succ_pool, pred_pool;

  // Per group: task range and dependency range (deps are (from, to) task pairs the group contributes).
  std::vector<int32_t> group_task_begin, group_task_count, group_dep_begin, group_dep_count;
  std::vector<int32_t> dep_from, dep_to;
  // Per op, kOutsPerPart entries per part (absolute task ids, -1 = none): the compute task, the end of the
  // reduce-scatter of its partial sums, the end of its weight-gradient ring, and the entry of its weight all-gather
  // (ZeRO-3: the part's first send, which waits for the part's inputs like its compute task does).
  static constexpr int kOutsPerPart = 4;
  std::vector<int32_t> out_begin;       // index into out_tasks
  std::vector<int32_t> out_tasks;
  // The weight all-gather entry of part `part` of op `op` (-1: none).
  int32_t gather_entry(int32_t op, int32_t part) const { return out_tasks[out_begin[op] + kOutsPerPart * part + 3]; }

  int32_t num_tasks() const { return static_cast<int32_t>(resource.size()); }
  // Calls `f` on each per-task vector (the fields above indexed by task id).
  template <class F>
  void ForEachPerTaskField(F&& f) {
    for (auto* v : {&resource, &op, &part, &consumer, &mem_device, &succ_off, &succ_cnt, &pred_off, &pred_cnt}) f(*v);
    for (auto* v : {&bytes, &mem_bytes}) f(*v);
    for (auto* v : {&first_hop, &alive, &fallback}) f(*v);
    f(duration);
    f(key);
    f(kind);
  }
  // Removes all tasks, groups and dependencies (keeping capacity for reuse).
  void Clear();
  // Drops the tasks from `n` on (their per-task fields only; groups, dependencies and pools are the caller's).
  void TruncateTasks(int32_t n);
  // Makes room for `tasks` tasks (at least num_tasks()), for `pool_entries` entries in each adjacency pool, and for
  // the dependency and output lists to grow by as many entries per task as they hold per task now, so that a graph
  // growing to that appends without allocating.
  void ReserveGrowth(int32_t tasks, size_t pool_entries);
};

// Per-op prices of plain (one-device) configs, computed on first use for each (op, device).
class PlainCostCache {
 public:
  struct Entry {
    Time ticks = -1;  // ToTicks of the price (-1: not computed yet)
    bool fallback = false;
  };
  PlainCostCache(int32_t num_ops, int32_t num_devices);
  // Price and fallback flag of op `op` placed whole on `device`.
  const Entry& Get(const Graph& graph, const Topology& topology, const CostModel& cost, OpId op, DeviceId device) {
    // By op: a build walks the ops in order, so it reads the entries in order whatever the placement.
    Entry& e = entries_[static_cast<size_t>(op) * num_devices_ + device];
    if (e.ticks < 0) Fill(graph, topology, cost, op, device, &e);
    return e;
  }
  // Starts loading the entry of (op, device) into the cache (a build reads it a few ops later).
  void Prefetch(OpId op, DeviceId device) const {
    __builtin_prefetch(&entries_[static_cast<size_t>(op) * num_devices_ + device]);
  }
  int64_t memory_bytes() const { return static_cast<int64_t>(entries_.capacity() * sizeof(Entry)); }

 private:
  void Fill(const Graph& graph, const Topology& topology, const CostModel& cost, OpId op, DeviceId device,
            Entry* entry);
  int32_t num_devices_;
  std::vector<Entry> entries_;
  // Fill's config and part shape, kept so that pricing an op does not allocate.
  OpConfig fill_config_;
  std::vector<int64_t> fill_shape_;
};

// Aggregates that do not depend on timing: per-resource busy time, bytes, task counts and buffers held, bytes moved,
// fallbacks, and the horizon (total ticks of all tasks and their latencies, a bound on any time; it saturates at
// kHorizonCap, far beyond what CheckHorizon accepts).
struct TaskTotals {
  std::vector<Time> busy;
  std::vector<int64_t> bytes;
  std::vector<int32_t> count;
  // Per resource (only devices hold any): the bytes of all buffers the tasks allocate there, an upper bound of the
  // dynamic memory peak (every buffer alive at once).
  std::vector<int64_t> held;
  int64_t bytes_moved = 0;
  int32_t num_tasks = 0, num_compute = 0, fallbacks = 0;
  Time horizon = 0;
  // Adds (sign = +1) or removes (sign = -1) task t's contribution.
  void Add(const TaskGraph& tg, int32_t t, int sign);
  void Reset(int32_t num_resources);
};

// Builds task groups into a TaskGraph.
class TaskBuilder {
 public:
  TaskBuilder(const Graph& graph, const Topology& topology, const CostModel& cost, const SimOptions& options,
              PlainCostCache* cache);

  // Builds the whole task graph of `strategy` (with each group's tasks and dependencies, which the delta simulator
  // patches) and its totals. Task ids increase with the tie-break keys.
  void BuildAll(const Strategy& strategy, TaskGraph* tg, TaskTotals* totals);
  // Appends group `op`'s tasks for `config` (compute parts, reduce-scatter rings, gradient all-reduce rings)
  // and records the op's output tasks.
  void AppendOpGroup(OpId op, const OpConfig& config, TaskGraph* tg);
  // Appends the transfers of edge `edge` between the already-built groups of its ends (sim/edge_build.cc).
  void AppendEdgeGroup(int32_t edge, const Strategy& strategy, TaskGraph* tg);
  // Static bytes (weights, gradients, optimizer state) op `op` places on each of its devices under `config`;
  // adds them to (*per_device)[device].
  void AddStaticMemory(OpId op, const OpConfig& config, std::vector<int64_t>* per_device) const;
  // Bytes of the builder's tables (per op, edge and device pair) and scratch.
  int64_t memory_bytes() const;
  // Static bytes of the whole strategy per device; a non-empty `plain` gives each op's device of a strategy whose
  // ops all run whole on one device (CheckStrategy), and is then read instead of the strategy.
  void StaticMemory(const Strategy& strategy, std::span<const DeviceId> plain, std::vector<int64_t>* per_device) const;

 private:
  // Clears the graph and sets its resources.
  void Reset(TaskGraph* tg) const;
  // BuildAll without the totals.
  void BuildGroups(const Strategy& strategy, TaskGraph* tg);
  // Segments a transfer of `bytes` over `hops` links is cut into.
  int64_t Segments(int64_t bytes, int64_t hops, bool segmented) const;
  int32_t NewTask(TaskGraph* tg, int32_t group, int32_t resource, Time duration, TaskKind kind, int32_t op,
                  int32_t part) const;
  // Appends the hop tasks of one transfer of `bytes` from device `src` to `dst` (segments when multi-hop);
  // returns the first-hop and last-hop task ids of each segment.
  void AppendRoute(TaskGraph* tg, int32_t group, DeviceId src, DeviceId dst, int64_t bytes, bool segmented,
                   TaskKind kind, int32_t op, int32_t part, int32_t consumer, std::vector<int32_t>* firsts,
                   std::vector<int32_t>* lasts) const;
  // Appends a ring of `steps` steps among the parts `members` (member i sends to member i + 1); reads the members
  // from ring_members_ (they stay there for the caller).
  void AppendRing(TaskGraph* tg, int32_t group, OpId op, const OpConfig& config, int64_t bytes, int32_t steps);
  // ZeRO-3 (OpConfig::shard_weights, sim/weight_gather.cc): appends to group `op` a ring all-gather of each weight
  // shard among its replicas (each sends its piece, WeightPieces), records each part's first send as its gather
  // entry, and makes each part's compute task wait for every piece it receives (which it holds until it ends); a
  // backward op's compute task also holds the rest of its shard's full gradient until its reduce-scatter ends.
  void AppendWeightGather(OpId op, const OpConfig& config, TaskGraph* tg);
  // AddDep(from, sink) for a consumer's compute task `sink`, and AddDep(from, its gather entry) when it has one.
  static void AddSinkDep(TaskGraph* tg, int32_t from, int32_t sink);
  static void AddDep(TaskGraph* tg, int32_t from, int32_t to);
  // Transfers share per tensor (docs/simulator.md, "One transfer per tensor and device"): the edges leaving a
  // forward op that carry the same bytes carry the same tensor, and one transfer moves a region of a producer part
  // to a device for every consumer part there that needs exactly that region. For the transfer of `region` of
  // part `part` of `edge`'s producer to part `consumer_part` of its consumer (on another device), returns whether
  // this (edge, consumer part) is the first (smallest edge id, then part) of those sharing it, and if so lists the
  // compute tasks of all of them in share_sinks_ (the consumers' groups must be built).
  bool SharedTransfer(int32_t edge, int32_t part, int32_t consumer_part, const Box& region, const Strategy& strategy,
                      const TaskGraph& tg);

  const Graph& graph_;
  const Topology& topology_;
  const CostModel& cost_;
  const SimOptions& options_;
  PlainCostCache* cache_;
  std::vector<int64_t> param_bytes_;   // ParamBytesOf per op
  std::vector<int64_t> output_bytes_;  // OutputBytes per op
  std::vector<int64_t> plain_static_;  // static bytes of each op run whole on one device
  std::vector<Time> resource_delay_;   // per resource
  std::vector<int32_t> firsts_, lasts_, share_sinks_;
  std::vector<int64_t> shape_scratch_;
  // The rings' scratch (AppendOpGroup, AppendRing, AppendWeightGather): the parts of one ring, and each member's
  // last task of the previous and the current step.
  std::vector<int32_t> ring_members_, ring_prev_, ring_cur_;
  // AppendEdgeGroup's scratch, reused from edge to edge: one send of a region of the producer's output from part p
  // to consumer part q (issued in rounds, see there), the regions a transfer of a shared tensor needs, and the
  // producer parts' owned boxes.
  struct RegionSend {
    int32_t round, p, q;
    int64_t bytes;
    int32_t region;  // index into regions_ of the region of the producer's output, -1 when nothing reads it
    bool in_place;
  };
  std::vector<RegionSend> sends_;
  std::vector<int32_t> round_begin_, by_round_;  // sends_ indices by round
  std::vector<Box> regions_, owned_;
};

// Rebuilds the CSR adjacency of every task from the groups' dependency lists.
void BuildAdjacency(TaskGraph* tg);

// Stores the groups' tasks in the order `groups` lists the groups (each exactly once): group groups[0]'s tasks get
// the first ids, each group's tasks in their present order. Tasks outside every group's range (left behind by
// rebuilt groups, see DeltaSimulator) are dropped, and so are dependencies and output entries outside every
// group's: the dependencies are stored group by group in group id order and the output entries op by op, as a
// build appends them. Every per-task field follows; the adjacency is rebuilt. Keys do not change, so ids no longer
// increase with them. Writes each task's new id to (*new_id)[old id] (-1 for a dropped task).
// The lists a permutation of per-task arrays goes through, kept by the caller so that permuting again does not
// allocate (each permuted array swaps its buffer with the list of its type).
struct PermuteScratch {
  std::vector<int32_t> s32;
  std::vector<int32_t> deps, outs;  // the dependency and output lists' (a list per size, so capacities settle)
  std::vector<int64_t> s64;
  std::vector<uint64_t> u64;
  std::vector<uint8_t> s8;
  std::vector<TaskKind> kinds;
};
void ReorderGroups(std::span<const int32_t> groups, TaskGraph* tg, std::vector<int32_t>* new_id,
                   PermuteScratch* scratch);
// Gives `scratch` at least the capacity of `v` before the two swap, so that the buffers going round through a
// PermuteScratch list never shrink and, once each has gone round, permuting does not allocate.
template <class T>
void ReserveLike(std::vector<T>* scratch, const std::vector<T>& v) {
  if (scratch->capacity() < v.capacity()) scratch->reserve(v.capacity());
}

// Gives `v` room for `n` entries, and an eighth more when it grows, so that a room asked for again and again with
// sizes that vary a little (the live task count between compactions) settles after the first few.
template <class T>
void ReserveRoom(std::vector<T>* v, size_t n) {
  if (v->capacity() < n) v->reserve(n + n / 8);
}

// Clears `tg` and sets its resources for `topology` (devices, then one per link with the link's latency as delay)
// and one group starting at task 0: the start of a builder whose tasks are keyed by id (pipelines, collectives).
void ResetSingleGroup(const Topology& topology, TaskGraph* tg);

}  // namespace devplace::sim

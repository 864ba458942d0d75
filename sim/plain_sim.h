// Full simulation of a plain placement (every op whole on one device) on the op graph itself (internal to sim/).
// The tasks are those of the general task graph (sim/task_graph.h: one compute task per op, task id = op id, then
// the hop tasks of each transfer, one transfer per tensor and destination device, in edge order) and so are the
// ids, tie-break keys and the event loop's rules (sim/engine.h), so the results equal the general path's bit for
// bit; but no general task graph is built: an op keeps compact per-op records (its out-edges say directly which
// op or transfer its end starts), a transfer one record, and a hop task 8 bytes (transfer, resource, price slot),
// read once when it leaves the ready heap. A transfer's first hops of all segments become ready at the
// producer's end with consecutive keys, so they leave the heap one after another and are timed together; a hop's
// next hop that would leave the queue next runs at once.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor_sharing.h"
#include "core/topology.h"
#include "sim/engine.h"
#include "sim/memory.h"
#include "sim/simulator.h"
#include "sim/task_graph.h"

namespace devplace::sim {

class PlainSim {
 public:
  // `graph`, `topology`, `cost`, `options` and `cache` must outlive the object.
  PlainSim(const Graph& graph, const Topology& topology, const CostModel& cost, const SimOptions& options,
           PlainCostCache* cache);

  // Whether the machine fits the compact records (at most 32,767 devices and links, and with more than 8 price
  // classes of hop, routes of at most 127 links); else use the general path.
  bool usable() const { return num_resources_ <= INT16_MAX && 2 * longest_route_ <= UINT8_MAX; }
  // Simulates the placement `device` (op o whole on device[o], every device in range) and returns the result
  // without a timeline, with `static_bytes` (per device) as its static memory; equal to the general path's
  // (TaskBuilder::BuildAll, Engine::Run, PeakScratch, Assemble). An error when the step is too long to simulate.
  Expected<SimResult> Run(std::span<const DeviceId> device, const std::vector<int64_t>& static_bytes);
  // The step time in ticks of the same simulation, without the memory peaks and critical path.
  Expected<Time> StepTicks(std::span<const DeviceId> device);
  // The step time in ticks and the dynamic memory peaks per device (in *dynamic_peak; Run's peak_bytes less the
  // static bytes) of the same simulation, without the critical path and the statistics of a SimResult.
  Expected<Time> StepTicksAndPeaks(std::span<const DeviceId> device, std::vector<int64_t>* dynamic_peak);
  // Bytes of the per-graph tables and per-run scratch.
  int64_t memory_bytes() const;

 private:
  // One transfer: the tensor of an edge from op `src` to op `dst`, which it also carries to the consumers listed
  // from members_[more] on (all on dst's device), over `hops` links in `segments` segments; its hop tasks have the
  // ids first + segment * hops + hop; price_rows_ holds its tensor's bytes at `prices` and its hop tasks' prices
  // from there on by their slots. `buffer_start`: after a kFull
  // run, the start of its buffer's task (segment 0's last hop, which delivers from this record anyway).
  struct Xfer {
    int32_t first, src, dst, more, prices;
    int16_t hops, segments;
    Time buffer_start;
  };
  // One hop task (hop_tasks_[id - ops]): its transfer, resource, what it is (kFirstHop: the first hop of a
  // segment, kLastHop: the last, kBuffer: segment 0's last hop, which holds the receive buffer, kSegmented: the
  // first hop of a transfer of two or more segments) and the slot of its price in price_rows_ from its
  // transfer's `prices`. Once it has run in a kFull loop, `crit` (in place of `xfer`) is the last op before it on a
  // critical path (Timing::crit_prev followed past hops; -1: none).
  static constexpr uint8_t kFirstHop = 1, kLastHop = 2, kBuffer = 4, kSegmented = 8;
  struct HopTask {
    union {
      int32_t xfer;
      int32_t crit;
    };
    int16_t resource;
    uint8_t what, slot;
  };
  // Per op while it waits for its inputs (as Engine::Waiting); once it has run in a kFull loop, `ready` holds its
  // end (its start is that less its price) and `bind` the last op before it on a critical path (as HopTask::crit).
  struct Waiting {
    Time ready;
    int32_t bind;
    int32_t pending;
  };
  // Prices every op, plans the transfers, sums the totals and counts each op's inputs; returns the task count, or
  // -1 when the tasks would need more than the int32 ids (nothing else of the plan is valid then).
  int32_t Plan(std::span<const DeviceId> device);
  // Plan's pass over the transfers: per edge its carrier (core/tensor_sharing.h: the edge whose transfer carries
  // its tensor, -1 when nothing crosses), then out_, xfers_, their members and hop tasks, their totals;
  // adds their task times to `horizon` and returns the task count (-1: more than the int32 ids, as Plan).
  int32_t PlanTransfers(std::span<const DeviceId> device, unsigned __int128* horizon);
  // Adds to totals_ what `transfers` transfers of edge size `size` between device pair `pair` (source * devices +
  // destination) add (their hop tasks' busy time, bytes and count per link; the bytes moved and held at the
  // destination) and returns their task times and latencies summed.
  unsigned __int128 AddTransferTotals(int32_t pair, int32_t size, int32_t transfers);
  // The hop tasks of transfer `x` (of `bytes`) cut into `segments` > 1 segments over `hops` links from
  // route_hop_'s entry `route`.
  void PlanSegments(int64_t bytes, int32_t x, int32_t route, int32_t hops, int64_t segments);
  // Room for the next `count` hop tasks at the end of hop_tasks_ (which keeps its size between runs).
  [[gnu::always_inline]] HopTask* HopSpace(int64_t count) {
    if (num_hops_ + count > static_cast<int64_t>(hop_tasks_.size())) GrowHops(count);
    HopTask* space = hop_tasks_.data() + num_hops_;
    num_hops_ += count;
    return space;
  }
  // Makes hop_tasks_ hold at least num_hops_ + `count` entries, and never more than the int32 task ids left after
  // the ops; when those do not suffice, sets ids_exhausted_ and restarts num_hops_ at 0 (the plan is discarded).
  void GrowHops(int64_t count);
  // One hop of a route: its resource, what its hop task is in a transfer of one segment, and its price class: its
  // column in price_rows_ (1 + the hop's (latency, bandwidth) class, or with per_transfer_rows_ 1 + its place in
  // the route).
  struct RouteHop {
    int16_t resource;
    uint8_t what, price_class;
  };
  // Ticks over a hop of `latency` seconds and `bandwidth` bytes/s of `bytes`, of a shorter and of a longer (one byte
  // more) segment of them cut into `segments`.
  static std::array<Time, 3> HopTicks(int64_t bytes, int64_t segments, double latency, double bandwidth);
  // HopTicks of a tensor of edge size `size` (an index into size_bytes_, cut into size_segments_[size]) over the
  // hop at route entry `route_entry`.
  std::array<Time, 3> RouteHopTicks(int32_t size, int32_t route_entry) const;
  // With per_transfer_rows_: appends to price_rows_ the bytes and then the prices of the next transfer (of edge size
  // `size` over `hops` links from route entry `route`, `segmented` or not); returns where they start (past the
  // int32 offsets, sets ids_exhausted_ and lists afresh).
  int32_t AddTransferRow(int32_t size, int32_t route, int32_t hops, bool segmented);
  // The event loop; with kFull it also records what the memory peaks and the critical path need. False when a
  // one-word heap key did not fit (then the run is repeated with two-word keys).
  template <bool kFull, class Keys>
  bool Loop(std::span<const DeviceId> device, QuadHeap<typename Keys::Item>& heap, Keys keys);
  // Plans and runs the loop (falling back to two-word keys when needed); returns the step in ticks, or an error
  // when the step is too long to simulate.
  template <bool kFull>
  Expected<Time> Simulate(std::span<const DeviceId> device);
  // Peaks of the buffers (per device) from the last kFull run (held by peaks_ until its next run).
  const std::vector<int64_t>& DynamicPeaks(std::span<const DeviceId> device);
  // The critical path of the last kFull run into `result`.
  void CriticalPath(SimResult* result) const;

  const Graph& graph_;
  const Topology& topology_;
  const CostModel& cost_;
  const SimOptions& options_;
  PlainCostCache* cache_;
  int32_t num_resources_ = 0;
  std::vector<Time> resource_delay_;  // per resource
  // Per graph: each op's out-edges' consumers (CSR in op order, the edges in the graph's out-edge order), each
  // op's output bytes; the route of every device pair (as resources, bandwidths and the seconds a hop's resource
  // is busy besides the bytes).
  std::vector<int32_t> out_off_, out_op_;
  // Per edge: its producer and consumer, its entry in the out-lists and its size (an index into the graph's
  // distinct edge sizes, with their bytes and the segments of a transfer of that size over a route of two or more
  // links): what the transfer plan reads of an edge, in one 16-byte record.
  struct EdgeSlot {
    int32_t src, dst, out, size;
  };
  std::vector<EdgeSlot> edge_out_;
  std::vector<int64_t> size_bytes_;
  std::vector<int32_t> size_segments_;
  std::vector<int64_t> output_bytes_;
  int32_t output_ops_ = 0;  // ops whose output holds bytes (one buffer each per run)
  std::vector<int32_t> route_off_;
  std::vector<RouteHop> route_hop_;
  std::vector<double> route_bandwidth_, route_latency_;
  // Transfer bytes and hop prices in ticks (HopTicks). Where the machine's hops have at most 8 (latency,
  // bandwidth) classes, a row of row_width_ = 1 + 3 x num_classes_ entries per edge size, at size x row_width_:
  // its bytes, then a whole tensor's price per class, a shorter segment's per class, a longer segment's per class
  // (a hop task's slot: 1 + class, plus num_classes_ per segment kind). Else (per_transfer_rows_, filled per run)
  // each transfer's own list: its bytes, then per hop of its route the whole tensor's price (slot 1 + the hop's
  // place), or a shorter and a longer segment's (slots 1 + 2 x place and one more). longest_route_: the most links
  // of a route there (else 0).
  int32_t num_classes_ = 0, row_width_ = 0, longest_route_ = 0;
  bool per_transfer_rows_ = false;
  std::vector<Time> price_rows_;
  // Per edge size and device pair (size * devices^2 + pair): the transfers of that kind planned so far in a run,
  // whose totals PlanTransfers adds at its end (zero between runs; empty when there are more kinds than edges or
  // 2^16, then each transfer's totals are added as it is planned).
  std::vector<int32_t> kind_count_;
  // Which edges carry one tensor (per graph, carriers per run), and per run: per entry of the out-lists what
  // the op's end starts (`target`: the consumer (>= 0) when the edge joins ops directly, -2 - the first hop task of
  // the transfer it carries, or -1 (another edge's transfer carries it); `xfer`: that transfer); the transfers,
  // their consumers and hop tasks (num_hops_ of hop_tasks_), per op its price and waiting record.
  TensorCarriers carriers_;
  struct OutEntry {
    int32_t target, xfer;
  };
  std::vector<OutEntry> out_;

  // Per edge whose transfer another edge carries, in edge order: its consumer and the next entry of that
  // transfer's list (-1: the last).
  struct Member {
    int32_t dst, next;
  };
  std::vector<Member> members_;
  std::vector<Xfer> xfers_;  // the run's num_xfers_ transfers first (at least one entry per edge)
  int32_t num_xfers_ = 0;
  std::vector<HopTask> hop_tasks_;
  int64_t num_hops_ = 0;
  bool ids_exhausted_ = false;  // the last plan needed more than the int32 task ids (or price offsets)
  std::vector<Time> op_ticks_;
  std::vector<int32_t> pending_;  // per op: inputs it waits for (direct inputs and transfer segments)
  std::vector<Waiting> waiting_;
  TaskTotals totals_;
  int32_t num_tasks_ = 0;
  // Per run of the loop: each resource's free time and last task; with kFull, per op the end of the last first hop
  // of the transfers carrying its output (at least its end; in op_sent_, which DynamicPeaks overwrites with the
  // output's free time; its spare last entry is what the loop's later hops raise in place of a producer's). The
  // other outputs of a kFull run are kept in records the loop holds anyway: ends and critical-path links in the
  // waiting records and hop tasks, buffer starts in the transfers. DynamicPeaks keeps each receive buffer's free
  // time in buffer_free_ (per transfer) for its second pass.
  std::vector<Time> free_;
  std::vector<int32_t> last_;
  std::vector<Time> op_sent_, buffer_free_;
  QuadHeap<uint64_t> packed_;
  QuadHeap<WideItem> wide_heap_;
  int32_t rebases_ = 0;
  PeakScratch peaks_;
};

}  // namespace devplace::sim

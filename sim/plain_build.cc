// The task graph of a strategy whose every op runs whole on one device (plain placements, what most searches
// evaluate), built directly: one compute task per op (task id = op id), then the transfer hops of each edge that
// carries a transfer (one per tensor and destination device: PlanSharing), in edge order. Ids, keys, successors,
// predecessor counts and the fields a full run reads (resource, duration, kind, op, alive, memory) equal what the
// group-wise build gives (see AppendOpGroup and AppendEdgeGroup), and so do part, consumer and bytes when the
// timeline is kept; the rest (the predecessor lists, first_hop, fallback and the group lists), which only the
// delta simulator reads, is left out (the arrays are emptied), and the order of a task's successors differs
// (nothing depends on it).
// Three sequential passes: the edges (PlanPlainEdges: number the hop tasks), the ops (PlainComputeTasks: compute
// tasks and their adjacency, in op order), the edges again (PlainHopTasks: hop tasks and theirs). The totals are
// summed on the way.
#include <algorithm>

#include "core/check.h"
#include "sim/task_graph.h"

namespace devplace::sim {

namespace {
// How many ops ahead PlainComputeTasks starts loading an op's price.
constexpr int32_t kPrefetchOps = 16;
// Adds `ticks` to the horizon sum, saturating at kHorizonCap.
inline void AddHorizon(Time* horizon, Time ticks) {
  *horizon = ticks >= kHorizonCap - *horizon ? kHorizonCap : *horizon + ticks;
}
}  // namespace

void TaskBuilder::BuildPlain(std::span<const DeviceId> device, TaskGraph* tg, TaskTotals* totals) {
  Reset(tg, true);  // every field of every task is written below
  totals->Reset(tg->num_resources);
  int64_t succ_entries = 0, hop_succ = 0;
  const int32_t tasks = PlanPlainEdges(device, &succ_entries, &hop_succ);
  SizePlainTasks(tasks, succ_entries + hop_succ, tg);
  Time horizon = 0;
  PlainComputeTasks(device, tg, totals, &horizon);
  PlainHopTasks(device, static_cast<int32_t>(succ_entries), tg, totals, &horizon);
  totals->horizon = horizon;
  totals->num_tasks = tasks;
  totals->num_compute = graph_.num_ops();
}

void TaskBuilder::PlanSharing(std::span<const DeviceId> device) {
  // The edges of one producer whose tensors cross to the same device: per device a short list of (bytes, smallest
  // edge) entries (a forward op's output usually has one size), reset per producer.
  const int32_t devices = topology_.num_devices();
  share_head_.assign(static_cast<size_t>(devices), -1);
  for (OpId u = 0; u < graph_.num_ops(); ++u) {
    const int32_t begin = out_off_[u], end = out_off_[u + 1];
    const DeviceId du = device[u];
    if (!forward_[u] || end - begin < 2) {  // nothing to share
      for (int32_t k = begin; k < end; ++k)
        share_rep_[out_edge_[k]] = device[out_op_[k]] == du || out_empty_[k] ? -1 : out_edge_[k];
      continue;
    }
    share_entries_.clear();
    for (int32_t k = begin; k < end; ++k) {
      const int32_t e = out_edge_[k];
      const DeviceId dv = device[out_op_[k]];
      if (dv == du || out_empty_[k]) {
        share_rep_[e] = -1;
        continue;
      }
      const int64_t bytes = out_bytes_[k];
      int32_t x = share_head_[dv];
      while (x >= 0 && share_entries_[x].bytes != bytes) x = share_entries_[x].next;
      if (x < 0) {
        x = static_cast<int32_t>(share_entries_.size());
        share_entries_.push_back({bytes, e, share_head_[dv]});
        share_head_[dv] = x;
      } else {
        share_entries_[x].rep = std::min(share_entries_[x].rep, e);
      }
      share_rep_[e] = -2 - x;  // resolved below, once every edge of u has been seen
    }
    for (int32_t k = begin; k < end; ++k) {
      const int32_t e = out_edge_[k];
      if (share_rep_[e] < -1) share_rep_[e] = share_entries_[-2 - share_rep_[e]].rep;
    }
    for (int32_t k = begin; k < end; ++k) share_head_[device[out_op_[k]]] = -1;
  }
}

int32_t TaskBuilder::PlanPlainEdges(std::span<const DeviceId> device, int64_t* succ_entries, int64_t* hop_succ) {
  const int32_t num_edges = graph_.num_edges();
  const int32_t devices = topology_.num_devices();
  edge_plan_.resize(static_cast<size_t>(num_edges));
  share_rep_.resize(static_cast<size_t>(num_edges));
  PlanSharing(device);
  // The consumers each transfer feeds (CSR by carrying edge, in edge order).
  member_off_.assign(static_cast<size_t>(num_edges) + 1, 0);
  for (int32_t e = 0; e < num_edges; ++e)
    if (share_rep_[e] >= 0) ++member_off_[share_rep_[e] + 1];
  for (int32_t e = 0; e < num_edges; ++e) member_off_[e + 1] += member_off_[e];
  member_op_.resize(static_cast<size_t>(member_off_[num_edges]));
  for (int32_t e = 0; e < num_edges; ++e)
    if (share_rep_[e] >= 0) member_op_[member_off_[share_rep_[e]]++] = graph_.edge(e).dst;
  for (int32_t e = num_edges; e > 0; --e) member_off_[e] = member_off_[e - 1];
  member_off_[0] = 0;
  int64_t next = graph_.num_ops(), succ = 0, hop = 0;
  for (int32_t e = 0; e < num_edges; ++e) {
    const int32_t rep = share_rep_[e];
    if (rep < 0) {
      edge_plan_[e] = {-1, 0, 1};
      ++succ;
      continue;
    }
    if (rep != e) {
      edge_plan_[e] = {-1, 0, 0};  // another edge's transfer carries it; counted with that edge
      continue;
    }
    const Edge& edge = graph_.edge(e);
    const int32_t pair = device[edge.src] * devices + device[edge.dst];
    const int64_t hops = route_off_[pair + 1] - route_off_[pair];
    const int64_t segments = Segments(edge.bytes, hops, true);
    const int64_t members = member_off_[e + 1] - member_off_[e];
    DEVPLACE_CHECK(next + hops * segments < (int64_t{1} << 31), "task graph too large");
    edge_plan_[e] = {static_cast<int32_t>(next), static_cast<int16_t>(hops), static_cast<int16_t>(segments)};
    next += hops * segments;
    succ += segments;
    hop += segments * (hops - 1 + members);
  }
  *succ_entries = succ;
  *hop_succ = hop;
  return static_cast<int32_t>(next);
}

void TaskBuilder::SizePlainTasks(int32_t num_tasks, int64_t succ_entries, TaskGraph* tg) const {
  const size_t tasks = static_cast<size_t>(num_tasks);
  tg->resource.resize(tasks);
  tg->duration.resize(tasks);
  tg->key.resize(tasks);
  tg->kind.resize(tasks);
  tg->alive.assign(tasks, 1);
  tg->op.resize(tasks);
  tg->mem_bytes.resize(tasks);
  tg->mem_device.resize(tasks);
  tg->succ_off.resize(tasks);
  tg->succ_cnt.resize(tasks);
  tg->pred_cnt.resize(tasks);
  tg->succ_pool.resize(static_cast<size_t>(succ_entries));
  for (auto* v : {&tg->first_hop, &tg->fallback}) v->clear();
  tg->pred_off.clear();
  tg->pred_pool.clear();
  if (options_.keep_timeline) {  // what the timeline reports of each task
    tg->part.assign(tasks, 0);
    tg->consumer.resize(tasks);
    tg->bytes.resize(tasks);
  } else {
    tg->part.clear();
    tg->consumer.clear();
    tg->bytes.clear();
  }
}

void TaskBuilder::PlainComputeTasks(std::span<const DeviceId> device, TaskGraph* tg, TaskTotals* totals,
                                    Time* horizon) {
  const int32_t n = graph_.num_ops();
  const bool timeline = options_.keep_timeline;
  int32_t* succ = tg->succ_pool.data();
  Time* busy = totals->busy.data();
  int32_t* count = totals->count.data();
  int64_t* held = totals->held.data();
  Time sum = *horizon;  // a local, so that the stores to the task arrays need not reload it
  int32_t so = 0;
  for (OpId o = 0; o < n; ++o) {
    const DeviceId d = device[o];
    if (o + kPrefetchOps < n) cache_->Prefetch(o + kPrefetchOps, device[o + kPrefetchOps]);
    const PlainCostCache::Entry& c = cache_->Get(graph_, topology_, cost_, o, d);
    tg->resource[o] = d;
    tg->duration[o] = c.ticks;
    tg->key[o] = static_cast<uint64_t>(o) << 32;
    tg->kind[o] = TaskKind::kCompute;
    tg->op[o] = o;
    if (timeline) {
      tg->consumer[o] = -1;
      tg->bytes[o] = 0;
    }
    tg->mem_bytes[o] = output_bytes_[o];
    tg->mem_device[o] = d;
    busy[d] += c.ticks;
    ++count[d];
    held[d] += output_bytes_[o];
    AddHorizon(&sum, c.ticks);
    totals->fallbacks += c.fallback;
    tg->succ_off[o] = so;
    // An edge between ops on one device, or that moves nothing, joins them directly (PlanPlainEdges); telling
    // that from the devices (a small array) saves reading the edge's plan.
    for (int32_t k = out_off_[o]; k < out_off_[o + 1]; ++k) {
      const OpId v = out_op_[k];
      if (device[v] == d || out_empty_[k]) {
        succ[so++] = v;
        continue;
      }
      const EdgePlan& plan = edge_plan_[out_edge_[k]];  // no segments where another edge's transfer carries it
      for (int32_t s = 0; s < plan.segments; ++s) succ[so++] = plan.first + s * plan.hops;
    }
    tg->succ_cnt[o] = so - tg->succ_off[o];
    int32_t preds = 0;  // one per same-device input, else one per segment of the transfer that carries it
    for (int32_t k = in_off_[o]; k < in_off_[o + 1]; ++k)
      preds += device[in_op_[k]] == d || in_empty_[k] ? 1 : edge_plan_[share_rep_[in_edge_[k]]].segments;
    tg->pred_cnt[o] = preds;
  }
  *horizon = sum;
}

void TaskBuilder::PlainHopTasks(std::span<const DeviceId> device, int32_t succ_entries, TaskGraph* tg,
                                TaskTotals* totals, Time* horizon) const {
  const int32_t n = graph_.num_ops();
  const int32_t num_edges = graph_.num_edges();
  const int32_t devices = topology_.num_devices();
  const bool timeline = options_.keep_timeline;
  int32_t* succ = tg->succ_pool.data();
  Time* busy = totals->busy.data();
  int32_t* count = totals->count.data();
  Time sum = *horizon;
  int32_t so = succ_entries;
  for (int32_t e = 0; e < num_edges; ++e) {
    const EdgePlan plan = edge_plan_[e];
    if (plan.first < 0) continue;
    const int32_t* members = member_op_.data() + member_off_[e];
    const int32_t num_members = member_off_[e + 1] - member_off_[e];
    const Edge& edge = graph_.edge(e);
    const OpId u = edge.src, v = edge.dst;
    const int32_t pair = device[u] * devices + device[v];
    const int32_t* hop_resource = route_resource_.data() + route_off_[pair];
    const double* hop_bandwidth = route_bandwidth_.data() + route_off_[pair];
    const double* hop_latency = route_latency_.data() + route_off_[pair];
    const uint64_t group = static_cast<uint64_t>(n + e) << 32;
    int32_t t = plan.first;
    for (int32_t s = 0; s < plan.segments; ++s) {
      const int64_t seg_bytes =
          plan.segments == 1
              ? edge.bytes
              : static_cast<int64_t>(static_cast<__int128>(edge.bytes) * (s + 1) / plan.segments) -
                    static_cast<int64_t>(static_cast<__int128>(edge.bytes) * s / plan.segments);
      for (int32_t h = 0; h < plan.hops; ++h, ++t) {
        const int32_t r = hop_resource[h];
        const Time ticks = ToTicks(hop_latency[h] + static_cast<double>(seg_bytes) / hop_bandwidth[h]);
        tg->resource[t] = r;
        tg->duration[t] = ticks;
        tg->key[t] = group | static_cast<uint32_t>(t - plan.first);
        tg->kind[t] = TaskKind::kTransfer;
        tg->op[t] = u;
        if (timeline) {
          tg->consumer[t] = v;
          tg->bytes[t] = seg_bytes;
        }
        tg->mem_bytes[t] = 0;
        tg->mem_device[t] = -1;
        tg->pred_cnt[t] = 1;
        tg->succ_off[t] = so;
        if (h + 1 < plan.hops) {
          succ[so++] = t + 1;
        } else {
          for (int32_t m = 0; m < num_members; ++m) succ[so++] = members[m];
        }
        tg->succ_cnt[t] = so - tg->succ_off[t];
        busy[r] += ticks;
        totals->bytes[r] += seg_bytes;
        ++count[r];
        AddHorizon(&sum, ticks + tg->resource_delay[r]);
      }
      totals->bytes_moved += seg_bytes;
    }
    tg->mem_bytes[plan.first + plan.hops - 1] = edge.bytes;  // the receive buffer, on the first segment's last hop
    tg->mem_device[plan.first + plan.hops - 1] = device[v];
    totals->held[device[v]] += edge.bytes;
  }
  *horizon = sum;
}

}  // namespace devplace::sim

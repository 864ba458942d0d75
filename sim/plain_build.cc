// The task graph of a strategy whose every op runs whole on one device (plain placements, what most searches
// evaluate), built directly: one compute task per op (task id = op id), then each edge's transfer hops in edge
// order. Ids, keys, dependencies and every per-task field equal what the group-wise build gives (see
// AppendOpGroup and AppendEdgeGroup); only the group lists, which a full run does not need, are left out.
// Two passes over the edges: the first counts each task's successors and predecessors and numbers the transfer
// hops, the second fills the adjacency in place.
#include "core/check.h"
#include "sim/task_graph.h"

namespace devplace::sim {

void TaskBuilder::BuildPlain(std::span<const DeviceId> device, TaskGraph* tg) {
  const int32_t n = graph_.num_ops();
  const int32_t num_edges = graph_.num_edges();
  const int32_t devices = topology_.num_devices();
  Reset(tg);
  auto device_of = [&](OpId o) { return device[o]; };

  // Pass 1: per edge, direct (same device or nothing to move) or the first of its hop tasks.
  tg->succ_cnt.assign(static_cast<size_t>(n), 0);
  tg->pred_cnt.assign(static_cast<size_t>(n), 0);
  edge_first_.resize(static_cast<size_t>(num_edges));
  int32_t next = n;
  for (int32_t e = 0; e < num_edges; ++e) {
    const Edge& edge = graph_.edge(e);
    const DeviceId du = device_of(edge.src), dv = device_of(edge.dst);
    if (du == dv || edge.bytes == 0) {
      edge_first_[e] = -1;
      ++tg->succ_cnt[edge.src];
      ++tg->pred_cnt[edge.dst];
      continue;
    }
    const int64_t hops = static_cast<int64_t>(topology_.route(du, dv).size());
    const int64_t segments = Segments(edge.bytes, hops, true);
    DEVPLACE_CHECK(next + hops * segments < (int64_t{1} << 31), "task graph too large");
    edge_first_[e] = next;
    next += static_cast<int32_t>(hops * segments);
    tg->succ_cnt[edge.src] += static_cast<int32_t>(segments);
    tg->pred_cnt[edge.dst] += static_cast<int32_t>(segments);
  }
  const size_t tasks = static_cast<size_t>(next);
  tg->resource.resize(tasks);
  tg->duration.resize(tasks);
  tg->key.resize(tasks);
  tg->kind.resize(tasks);
  tg->first_hop.assign(tasks, 0);
  tg->alive.assign(tasks, 1);
  tg->op.resize(tasks);
  tg->part.assign(tasks, 0);
  tg->consumer.resize(tasks);
  tg->bytes.resize(tasks);
  tg->mem_bytes.resize(tasks);
  tg->mem_device.resize(tasks);
  tg->fallback.assign(tasks, 0);
  tg->succ_off.resize(tasks);
  tg->pred_off.resize(tasks);
  tg->succ_cnt.resize(tasks, 1);  // every hop has one successor and one predecessor
  tg->pred_cnt.resize(tasks, 1);

  // Compute tasks, and the adjacency offsets (the counts become fill cursors for the compute tasks).
  int32_t so = 0, po = 0;
  for (OpId o = 0; o < n; ++o) {
    const DeviceId d = device_of(o);
    const PartCost c = cache_->Get(graph_, topology_, cost_, o, d);
    tg->resource[o] = d;
    tg->duration[o] = ToTicks(c.seconds);
    tg->key[o] = static_cast<uint64_t>(o) << 32;
    tg->kind[o] = TaskKind::kCompute;
    tg->op[o] = o;
    tg->consumer[o] = -1;
    tg->bytes[o] = 0;
    tg->mem_bytes[o] = output_bytes_[o];
    tg->mem_device[o] = d;
    tg->fallback[o] = c.fallback;
    tg->succ_off[o] = so;
    tg->pred_off[o] = po;
    so += tg->succ_cnt[o];
    po += tg->pred_cnt[o];
    tg->succ_cnt[o] = 0;
    tg->pred_cnt[o] = 0;
  }
  for (int32_t t = n; t < next; ++t) {
    tg->succ_off[t] = so + (t - n);
    tg->pred_off[t] = po + (t - n);
  }
  tg->succ_pool.resize(static_cast<size_t>(so + next - n));
  tg->pred_pool.resize(static_cast<size_t>(po + next - n));
  int32_t* succ = tg->succ_pool.data();
  int32_t* pred = tg->pred_pool.data();
  const int32_t* succ_off = tg->succ_off.data();
  const int32_t* pred_off = tg->pred_off.data();
  int32_t* succ_fill = tg->succ_cnt.data();
  int32_t* pred_fill = tg->pred_cnt.data();

  // Pass 2: the hop tasks and all dependencies.
  for (int32_t e = 0; e < num_edges; ++e) {
    const Edge& edge = graph_.edge(e);
    const OpId u = edge.src, v = edge.dst;
    const int32_t first = edge_first_[e];
    if (first < 0) {
      succ[succ_off[u] + succ_fill[u]++] = v;
      pred[pred_off[v] + pred_fill[v]++] = u;
      continue;
    }
    const DeviceId dv = device_of(v);
    const std::span<const LinkId> links = topology_.route(device_of(u), dv);
    const int64_t hops = static_cast<int64_t>(links.size());
    const int64_t segments = Segments(edge.bytes, hops, true);
    const uint64_t group = static_cast<uint64_t>(n + e) << 32;
    int32_t t = first;
    uint32_t local = 0;
    for (int64_t s = 0; s < segments; ++s) {
      const int64_t seg_bytes = segments == 1 ? edge.bytes
                                              : static_cast<int64_t>(static_cast<__int128>(edge.bytes) * (s + 1) /
                                                                     segments) -
                                                    static_cast<int64_t>(static_cast<__int128>(edge.bytes) * s /
                                                                         segments);
      int32_t prev = u;
      for (int64_t h = 0; h < hops; ++h, ++t) {
        const Link& link = topology_.link(links[h]);
        tg->resource[t] = devices + links[h];
        tg->duration[t] = ToTicks(static_cast<double>(seg_bytes) / link.bandwidth);
        tg->key[t] = group | local++;
        tg->kind[t] = TaskKind::kTransfer;
        tg->op[t] = u;
        tg->consumer[t] = v;
        tg->bytes[t] = seg_bytes;
        tg->mem_bytes[t] = 0;
        tg->mem_device[t] = -1;
        if (h > 0) {
          succ[succ_off[prev]] = t;
        } else {
          tg->first_hop[t] = 1;
          succ[succ_off[u] + succ_fill[u]++] = t;
        }
        pred[pred_off[t]] = prev;
        prev = t;
      }
      succ[succ_off[prev]] = v;
      pred[pred_off[v] + pred_fill[v]++] = prev;
    }
    tg->mem_bytes[first + hops - 1] = edge.bytes;  // the receive buffer, on the first segment's last hop
    tg->mem_device[first + hops - 1] = dv;
  }
}

}  // namespace devplace::sim

// ZeRO-3 weight gathers (docs/simulator.md "ZeRO"): an op whose config has shard_weights holds one piece of each
// weight shard per replica and all-gathers the shard around a ring of its replicas before it computes.
#include <algorithm>

#include "sim/task_graph.h"

namespace devplace::sim {
namespace {

// Bytes of piece `k` of `n` equal pieces of `total` (floor boundaries, as every other split of bytes here).
int64_t PieceBytes(int64_t total, int32_t k, int32_t n) {
  auto at = [&](int32_t i) { return static_cast<int64_t>(static_cast<__int128>(total) * i / n); };
  return at(k + 1) - at(k);
}

}  // namespace

void TaskBuilder::AddSinkDep(TaskGraph* tg, int32_t from, int32_t sink) {
  AddDep(tg, from, sink);
  if (const int32_t gate = tg->gather_entry(tg->op[sink], tg->part[sink]); gate >= 0) AddDep(tg, from, gate);
}

void TaskBuilder::AppendWeightGather(OpId op, const OpConfig& config, TaskGraph* tg) {
  const int32_t group = op;
  const Op& o = graph_.op(op);
  const PartLayout layout = Layout(o, config);
  const int32_t r = layout.replicas, pieces = WeightPieces(o, config);
  const int64_t param = param_bytes_[op];
  const int32_t base = tg->group_task_begin[group], out = tg->out_begin[op];
  std::vector<int32_t>& members = ring_members_;
  std::vector<int32_t>& prev_last = ring_prev_;
  std::vector<int32_t>& cur_last = ring_cur_;
  members.assign(static_cast<size_t>(r), 0);
  prev_last.assign(static_cast<size_t>(r), 0);
  cur_last.assign(static_cast<size_t>(r), 0);
  for (int32_t ring = 0; ring < layout.copies * layout.shards; ++ring) {
    const int32_t copy = ring / layout.shards, shard = ring % layout.shards;
    for (int32_t p = copy * layout.distinct; p < (copy + 1) * layout.distinct; ++p)
      if (ShardIndex(o, config, p) == shard) members[ReplicaIndex(o, config, p)] = p;
    // Step k: member i sends piece (i - k) mod r of the shard (its own at step 0, then the one it received) to
    // member i + 1, which keeps it until its compute task ends.
    for (int32_t k = 0; k < r - 1; ++k) {
      for (int32_t i = 0; i < r; ++i) {
        const int32_t from = members[i], to = members[(i + 1) % r];
        const int64_t bytes = std::max<int64_t>(1, PieceBytes(param, shard * r + (i - k + r) % r, pieces));
        AppendRoute(tg, group, config.devices[from], config.devices[to], bytes, false, TaskKind::kCollective, op,
                    from, -1, &firsts_, &lasts_);
        if (k == 0) tg->out_tasks[out + TaskGraph::kOutsPerPart * from + 3] = firsts_[0];
        else AddDep(tg, prev_last[(i + r - 1) % r], firsts_[0]);
        cur_last[i] = lasts_[0];
        tg->mem_bytes[lasts_[0]] = bytes;
        tg->mem_device[lasts_[0]] = config.devices[to];
        AddDep(tg, lasts_[0], base + to);
      }
      std::swap(prev_last, cur_last);
    }
    if (o.role != OpRole::kBackward) continue;
    // The full gradient of the shard exists from the compute until the reduce-scatter (whose sends wait for the
    // compute task) has sent it on; the reduced piece the replica keeps is static memory.
    const int64_t shard_bytes = PieceBytes(param, shard, layout.shards);
    for (int32_t i = 0; i < r; ++i)
      tg->mem_bytes[base + members[i]] += shard_bytes - PieceBytes(param, shard * r + i, pieces);
  }
}

}  // namespace devplace::sim

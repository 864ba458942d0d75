// The transfer group of an edge (TaskBuilder::AppendEdgeGroup, docs/simulator.md): the hops that carry each
// region a consumer part needs from the producer part owning it (one transfer per tensor, part and destination
// device: SharedTransfer) and the weight gradient an update part reads from one replica. The op groups and the
// rest of the builder are in sim/task_graph.cc.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/cut_alignment.h"
#include "core/tensor_sharing.h"
#include "sim/partition.h"
#include "sim/task_graph.h"

namespace devplace::sim {

bool TaskBuilder::SharedTransfer(int32_t edge, int32_t part, int32_t consumer_part, const Box& region,
                                 const Strategy& strategy, const TaskGraph& tg) {
  share_sinks_.clear();
  const Edge& e = graph_.edge(edge);
  const Op& u = graph_.op(e.src);
  const OpConfig& cu = strategy.configs[e.src];
  const DeviceId src = cu.devices[part];
  const DeviceId dst = strategy.configs[e.dst].devices[consumer_part];
  const Box owned = cu.num_parts() == 1 ? FullBox(u.shape) : OwnedBox(u, cu, part);
  for (int32_t other : graph_.out_edges(e.src)) {
    const Edge& x = graph_.edge(other);
    if (!SameTensor(graph_, edge, other)) continue;
    const OpConfig& cx = strategy.configs[x.dst];
    for (int32_t q = 0; q < cx.num_parts(); ++q) {
      if (cx.devices[q] != dst || src == dst) continue;
      if (cx.num_parts() > 1 && !SameBox(Intersection(owned, NeededBox(graph_.op(x.dst), cx, q, u)), region)) continue;
      if (cx.num_parts() == 1 && !SameBox(owned, region)) continue;
      if (other < edge || (other == edge && q < consumer_part)) return false;
      share_sinks_.push_back(tg.group_task_begin[x.dst] + q);
    }
  }
  return true;
}

void TaskBuilder::AppendEdgeGroup(int32_t edge, const Strategy& strategy, TaskGraph* tg) {
  const int32_t group = graph_.num_ops() + edge;
  const Edge& e = graph_.edge(edge);
  const Op& u = graph_.op(e.src);
  const Op& v = graph_.op(e.dst);
  const OpConfig& cu = strategy.configs[e.src];
  const OpConfig& cv = strategy.configs[e.dst];
  tg->group_task_begin[group] = tg->num_tasks();
  tg->group_task_count[group] = 0;
  tg->group_dep_begin[group] = static_cast<int32_t>(tg->dep_from.size());
  const bool weight_gradient = v.role == OpRole::kUpdate;
  const int32_t ubase = tg->out_begin[e.src];
  const int32_t vbase = tg->group_task_begin[e.dst];

  // A tensor moves once per (tensor, part, destination device) (core/tensor_sharing.h): the first edge of a
  // shared transfer (SharedTransfer) carries it to every consumer part that reads it there, the others add
  // nothing. `in_place`: the bytes land in a buffer the consumer's device already holds (no receive buffer).
  const bool shares = SharesTensor(graph_, edge);
  // `region` (of the producer's output) is read only by a transfer of a shared tensor (SharedTransfer), so it may
  // be null where none is (the weight gradient: an edge into an update op is never shared).
  auto connect = [&](int32_t p, int32_t q, int64_t bytes, const Box* region, bool in_place = false) {
    const int32_t* outs = &tg->out_tasks[ubase + TaskGraph::kOutsPerPart * p];
    const int32_t sink = vbase + q;
    const DeviceId src = cu.devices[p], dst = cv.devices[q];
    const int32_t extra = weight_gradient ? outs[2] : outs[1];
    if (src == dst || bytes == 0) {
      AddSinkDep(tg, outs[0], sink);
      if (extra >= 0) AddSinkDep(tg, extra, sink);
      return;
    }
    if (shares && !SharedTransfer(edge, p, q, *region, strategy, *tg)) return;
    AppendRoute(tg, group, src, dst, bytes, true, TaskKind::kTransfer, e.src, p, e.dst, &firsts_, &lasts_);
    for (int32_t f : firsts_) {
      AddDep(tg, outs[0], f);
      if (extra >= 0) AddDep(tg, extra, f);
    }
    if (!shares) share_sinks_.assign(1, sink);
    for (int32_t l : lasts_)
      for (int32_t s : share_sinks_) AddSinkDep(tg, l, s);
    tg->mem_bytes[lasts_[0]] = in_place ? 0 : bytes;
    tg->mem_device[lasts_[0]] = dst;
  };

  if (cu.num_parts() == 1 && cv.num_parts() == 1) {
    const Box whole = FullBox(u.shape);
    connect(0, 0, e.bytes, &whole);
  } else if (weight_gradient) {
    // The weight gradient: an update part reads the bytes of each piece of the gradient (WeightPieces: a shard,
    // or under ZeRO-3 a replica's reduce-scattered piece of one) that its own slice of the weights (its region of
    // the flat update op) covers, from one part holding it, the consumer's own device when one does.
    const int32_t pieces = WeightPieces(u, cu);
    const int64_t elements = v.shape.size() == 1 ? std::max<int64_t>(1, v.shape[0]) : 1;
    for (int32_t q = 0; q < cv.num_parts(); ++q) {
      const Box region = ComputedBox(v, cv, q);
      const int64_t lo = v.shape.size() == 1 ? region.lo[0] : 0, hi = v.shape.size() == 1 ? region.hi[0] : 1;
      for (int32_t piece = 0; piece < pieces; ++piece) {
        // Piece `piece` covers [piece / pieces, (piece + 1) / pieces) of the weights, the part [lo, hi) / elements.
        if (!(static_cast<__int128>(lo) * pieces < static_cast<__int128>(piece + 1) * elements &&
              static_cast<__int128>(piece) * elements < static_cast<__int128>(hi) * pieces))
          continue;
        int32_t source = -1;
        for (int32_t p = 0; p < cu.num_parts(); ++p) {
          if (WeightPiece(u, cu, p) != piece) continue;
          if (cu.devices[p] == cv.devices[q]) {
            source = p;
            break;
          }
          if (source < 0 || ReplicaIndex(u, cu, p) < ReplicaIndex(u, cu, source)) source = p;
        }
        const int64_t bytes = std::min(ScaleBytes(e.bytes, piece + 1, pieces), ScaleBytes(e.bytes, hi, elements)) -
                              std::max(ScaleBytes(e.bytes, piece, pieces), ScaleBytes(e.bytes, lo, elements));
        connect(source, q, std::max<int64_t>(0, bytes), nullptr);
      }
    }
  } else {
    // Every distinct region the consumer part needs is read from one copy of its owner: the one on the consumer's
    // device, else the one the fewest links away (the lowest copy on ties). The sends are issued as a pairwise
    // exchange: round k holds the sends from device d to device d + k (mod the device count), so that in an
    // all-to-all or all-gather no device's inbound link receives from every sender at once.
    const PartLayout lu = Layout(u, cu);
    const int64_t volume = std::max<int64_t>(1, NumElements(u));
    std::vector<RegionSend>& sends = sends_;
    sends.clear();
    regions_.clear();
    const int32_t devices = topology_.num_devices();
    bool even = false;
    if (AlignedCuts(u, cu, v, cv, &even)) {
      // Both ends split alike (the usual case): consumer part q reads producer part q % distinct's box from its
      // nearest copy, and nothing else (the boxes tile), which the general loop below would find box by box.
      const int64_t part_volume = even ? NumElements(u) / lu.distinct : 0;
      const int64_t part_bytes = even ? ScaleBytes(e.bytes, part_volume, volume) : 0;
      for (int32_t q = 0; q < cv.num_parts(); ++q) {
        const int32_t p = q % lu.distinct;
        const int64_t overlap = even ? part_volume : Volume(ComputedBox(u, cu, p));
        if (overlap == 0) continue;
        const int32_t source = NearestCopy(topology_, cu, lu, p, cv.devices[q]);
        int32_t region = -1;
        if (shares && cu.devices[source] != cv.devices[q]) {
          region = static_cast<int32_t>(regions_.size());
          regions_.push_back(ComputedBox(u, cu, p));
        }
        sends.push_back({(cv.devices[q] - cu.devices[source] + devices) % devices, source, q,
                         even ? part_bytes : ScaleBytes(e.bytes, overlap, volume), region, false});
      }
    } else {
      std::vector<Box>& owned = owned_;
      owned.resize(static_cast<size_t>(lu.distinct));
      for (int32_t p = 0; p < lu.distinct; ++p) owned[p] = OwnedBox(u, cu, p);
      // A reduced output is gathered in place: a slice of a reduce-scattered sum lands in the full-size partial-sum
      // buffer of a part on the consumer's device that computed it and that the consumer also reads (so that buffer
      // stays alive until the consumer ends), as an all-reduce leaves the sum there.
      for (int32_t q = 0; q < cv.num_parts(); ++q) {
        const Box need = NeededBox(v, cv, q, u);
        const size_t begin = sends.size();
        int32_t local = -1;  // a part on the consumer's device that the consumer reads
        for (int32_t p = 0; p < lu.distinct; ++p) {
          const int64_t overlap = OverlapVolume(owned[p], need);
          if (overlap == 0) continue;
          const int32_t source = NearestCopy(topology_, cu, lu, p, cv.devices[q]);
          if (cu.devices[source] == cv.devices[q]) local = source;
          sends.push_back({(cv.devices[q] - cu.devices[source] + devices) % devices, source, q,
                           ScaleBytes(e.bytes, overlap, volume), static_cast<int32_t>(regions_.size()), false});
          regions_.push_back(Intersection(owned[p], need));
        }
        if (lu.reduction == 1 || local < 0) continue;
        const Box held = ComputedBox(u, cu, local);
        for (size_t k = begin; k < sends.size(); ++k) {
          const Box& slice = owned[sends[k].p % lu.distinct];
          sends[k].in_place = OverlapVolume(held, slice) == Volume(slice);
        }
      }
    }
    // Stable by round (rounds are 0 .. devices - 1): a counting sort of the sends' indices.
    round_begin_.assign(static_cast<size_t>(devices) + 1, 0);
    for (const RegionSend& s : sends) ++round_begin_[s.round + 1];
    for (int32_t r = 0; r < devices; ++r) round_begin_[r + 1] += round_begin_[r];
    by_round_.resize(sends.size());
    for (size_t k = 0; k < sends.size(); ++k) by_round_[round_begin_[sends[k].round]++] = static_cast<int32_t>(k);
    for (int32_t k : by_round_) {
      const RegionSend& s = sends[k];
      connect(s.p, s.q, s.bytes, s.region >= 0 ? &regions_[s.region] : nullptr, s.in_place);
    }
  }
  tg->group_dep_count[group] = static_cast<int32_t>(tg->dep_from.size()) - tg->group_dep_begin[group];
}

}  // namespace devplace::sim

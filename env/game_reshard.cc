// PlacementGame's star reshard estimates (split_star_reshard_seconds, split_uniform_star_reshard_seconds): the
// resharding a split group's unsplit neighbours force, priced as transfers to and from the one device they run on.
#include <algorithm>
#include <map>
#include <vector>

#include "core/partition.h"
#include "core/topology.h"
#include "env/game.h"

namespace devplace {

namespace {

// Volume of `region(p)` / the elements of `of`, for each of the n parts.
template <typename Region>
std::vector<double> PartFractions(int32_t n, const Op& of, Region region) {
  const double elements = static_cast<double>(std::max<int64_t>(1, NumElements(of)));
  std::vector<double> fractions(n);
  for (int32_t p = 0; p < n; ++p) fractions[p] = static_cast<double>(Volume(region(p))) / elements;
  return fractions;
}

}  // namespace

void PlacementGame::InitStarReshard(int32_t grp, int32_t action, const RingHops& ring, double legal_missing_bytes,
                                    MissingVolumes* volumes) {
  const size_t cell = SplitIndex(grp, action);
  const SplitCandidate& cand = candidates_[action - num_devices()];
  const Graph& g = *graph_;
  const DeviceId home = reference_device_;  // where the unsplit neighbours are assumed to run
  const auto n = static_cast<int32_t>(cand.devices.size());
  const double spread = static_cast<double>(n - 1) / n;
  // Per producer outside the group: the bytes each part needs of it (one transfer per tensor and device, so the
  // largest need over the consumers). Per member feeding another group: the bytes of its shards, each sent home
  // once. [0]: every neighbour unsplit; [1]: only the neighbours that cannot take the candidate.
  std::map<OpId, std::vector<double>> inputs[2];
  std::map<OpId, std::pair<double, std::vector<double>>> outputs[2];  // (largest edge bytes, shares)
  double ring_bytes = 0.0;
  for (OpId op : groups_.members[grp]) {
    const Op& o = g.op(op);
    const OpConfig config = *CandidateOpConfig(o, cand);
    bool partial = false;
    for (size_t k = 0; k < config.degrees.size(); ++k) partial |= config.degrees[k] > 1 && o.dims[k].output_axis < 0;
    if (partial) ring_bytes += static_cast<double>(OutputBytes(o)) * spread;
    for (int32_t e : g.in_edges(op)) {
      const OpId src = g.edge(e).src;
      const int32_t other = groups_.group_of_op[src];
      const auto bytes = static_cast<double>(g.edge(e).bytes);
      if (other == grp) {
        ring_bytes += MissingBytes(action - num_devices(), e, volumes);
        continue;
      }
      const std::vector<double> need =
          PartFractions(n, g.op(src), [&](int32_t p) { return NeededBox(o, config, p, g.op(src)); });
      for (int v = 0; v < (can_split(other, action) ? 1 : 2); ++v) {
        std::vector<double>& most = inputs[v][src];
        most.resize(n, 0.0);
        for (int32_t p = 0; p < n; ++p) most[p] = std::max(most[p], bytes * need[p]);
      }
    }
    std::vector<double> shards;  // the share of the output part p sends home (0 for copies of a replicated shard)
    for (int32_t e : g.out_edges(op)) {
      const int32_t other = groups_.group_of_op[g.edge(e).dst];
      if (other == grp) continue;  // priced from the consumer's side above
      if (shards.empty()) {
        shards = PartFractions(n, o, [&](int32_t p) { return OwnedBox(o, config, p); });
        for (int32_t p = 0; p < n; ++p)
          if (ReplicaIndex(o, config, p) != 0) shards[p] = 0.0;
      }
      for (int v = 0; v < (can_split(other, action) ? 1 : 2); ++v) {
        auto [it, added] = outputs[v].try_emplace(op, 0.0, shards);
        it->second.first = std::max(it->second.first, static_cast<double>(g.edge(e).bytes));
      }
    }
  }
  double seconds[2];
  std::vector<Transfer> transfers;
  for (int v = 0; v < 2; ++v) {
    transfers.clear();
    for (const auto& [src, need] : inputs[v])
      for (int32_t p = 0; p < n; ++p) transfers.push_back({home, cand.devices[p], static_cast<int64_t>(need[p])});
    for (const auto& [op, out] : outputs[v])
      for (int32_t p = 0; p < n; ++p)
        if (out.second[p] > 0)
          transfers.push_back({cand.devices[p], home, static_cast<int64_t>(out.first * out.second[p])});
    const double ring_total = ring_bytes + (v == 0 ? 0.0 : legal_missing_bytes);
    seconds[v] = ConcurrentTransferTime(*topology_, transfers) +
                 (ring_total > 0 ? RingTime(*topology_, ring, static_cast<int64_t>(ring_total / n)) : 0.0);
  }
  star_reshard_seconds_[cell] = seconds[0];
  uniform_star_reshard_seconds_[cell] = seconds[1];
}

}  // namespace devplace

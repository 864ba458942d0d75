// PlacementGame's star reshard estimates (split_star_reshard_seconds, split_uniform_star_reshard_seconds): the
// resharding a split group's unsplit neighbours force, priced as transfers to and from the one device they run on.
#include <algorithm>
#include <vector>

#include "core/partition.h"
#include "core/topology.h"
#include "env/game.h"

namespace devplace {

namespace {

// Per op, n values (one per part), gathered in the order the ops come and then merged per op by the largest value
// of each part, in op order (what a std::map of max-merged rows gives, without a node per op).
class PartRows {
 public:
  explicit PartRows(int32_t n) : n_(n) {}
  // A new row for `op` (merged with its other rows by Merge): n values to fill, and the row's scalar.
  double* Add(OpId op, double scalar) {
    ops_.push_back(op);
    scalars_.push_back(scalar);
    values_.resize(values_.size() + static_cast<size_t>(n_), 0.0);
    return &values_[values_.size() - static_cast<size_t>(n_)];
  }
  // Calls visit(op, scalar, values) once per op in increasing op order, the scalar and each value the largest of
  // the op's rows.
  template <typename Visit>
  void Merge(Visit visit) {
    order_.resize(ops_.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return ops_[a] < ops_[b]; });
    merged_.resize(static_cast<size_t>(n_));
    for (size_t i = 0; i < order_.size();) {
      const OpId op = ops_[order_[i]];
      double scalar = scalars_[order_[i]];
      std::copy_n(&values_[order_[i] * n_], n_, merged_.begin());
      for (++i; i < order_.size() && ops_[order_[i]] == op; ++i) {
        scalar = std::max(scalar, scalars_[order_[i]]);
        for (int32_t p = 0; p < n_; ++p) merged_[p] = std::max(merged_[p], values_[order_[i] * n_ + p]);
      }
      visit(op, scalar, merged_);
    }
  }

 private:
  int32_t n_;
  std::vector<OpId> ops_;
  std::vector<double> scalars_, values_, merged_;
  std::vector<size_t> order_;
};

}  // namespace

void PlacementGame::InitStarReshard(int32_t grp, int32_t action, const RingHops& ring, double legal_missing_bytes,
                                    CandidateOps* ops) {
  const size_t cell = SplitIndex(grp, action);
  const SplitCandidate& cand = candidates_[action - num_devices()];
  const Graph& g = *graph_;
  const DeviceId home = reference_device_;  // where the unsplit neighbours are assumed to run
  const auto n = static_cast<int32_t>(cand.devices.size());
  const double spread = static_cast<double>(n - 1) / n;
  // Per producer outside the group: the bytes each part needs of it (one transfer per tensor and device, so the
  // largest need over the consumers). Per member feeding another group: the largest edge bytes and the share of
  // its output each part sends home (0 for copies of a replicated shard), each sent home once. [0]: every
  // neighbour unsplit; [1]: only the neighbours that cannot take the candidate.
  PartRows inputs[2] = {PartRows(n), PartRows(n)}, outputs[2] = {PartRows(n), PartRows(n)};
  std::vector<double> shares(static_cast<size_t>(n));  // the current member's output shares, once computed
  double ring_bytes = 0.0;
  for (OpId op : groups_.members[grp]) {
    const Op& o = g.op(op);
    const OpConfig& config = *ops->config[op];
    // PartsAlike: every axis the config cuts divides evenly, so every part needs (and computes) the same volume of
    // each tensor and one part's box gives all parts' bytes. Decided at the op's first edge to another group.
    int alike = -1;
    auto parts_alike = [&] {
      if (alike < 0) alike = PartsAlike(g, op, config) ? 1 : 0;
      return alike == 1;
    };
    bool partial = false;
    for (size_t k = 0; k < config.degrees.size(); ++k) partial |= config.degrees[k] > 1 && o.dims[k].output_axis < 0;
    if (partial) ring_bytes += static_cast<double>(OutputBytes(o)) * spread;
    for (int32_t e : g.in_edges(op)) {
      const OpId src = g.edge(e).src;
      const int32_t other = groups_.group_of_op[src];
      if (other == grp) {
        ring_bytes += MissingBytes(e, ops);
        continue;
      }
      const auto bytes = static_cast<double>(g.edge(e).bytes);
      const double elements = static_cast<double>(std::max<int64_t>(1, NumElements(g.op(src))));
      const int views = can_split(other, action) ? 1 : 2;
      double* need = inputs[0].Add(src, 0.0);
      if (parts_alike()) {
        std::fill_n(need, n, bytes * (static_cast<double>(Volume(NeededBox(o, config, 0, g.op(src)))) / elements));
      } else {
        for (int32_t p = 0; p < n; ++p)
          need[p] = bytes * (static_cast<double>(Volume(NeededBox(o, config, p, g.op(src)))) / elements);
      }
      if (views == 2) std::copy_n(need, n, inputs[1].Add(src, 0.0));
    }
    bool have_shares = false;
    for (int32_t e : g.out_edges(op)) {
      const int32_t other = groups_.group_of_op[g.edge(e).dst];
      if (other == grp) continue;  // priced from the consumer's side above
      const auto bytes = static_cast<double>(g.edge(e).bytes);
      if (!have_shares) {
        const double elements = static_cast<double>(std::max<int64_t>(1, NumElements(o)));
        // Owned boxes are the computed ones unless a reduction scatters them (not necessarily evenly).
        const bool same_share = parts_alike() && Layout(o, config).reduction == 1;
        const double first = same_share ? static_cast<double>(Volume(OwnedBox(o, config, 0))) / elements : 0.0;
        for (int32_t p = 0; p < n; ++p)
          shares[p] = ReplicaIndex(o, config, p) != 0
                          ? 0.0
                          : (same_share ? first : static_cast<double>(Volume(OwnedBox(o, config, p))) / elements);
        have_shares = true;
      }
      for (int v = 0; v < (can_split(other, action) ? 1 : 2); ++v)
        std::copy_n(shares.begin(), n, outputs[v].Add(op, bytes));
    }
  }
  double seconds[2];
  std::vector<Transfer> transfers;
  for (int v = 0; v < 2; ++v) {
    transfers.clear();
    inputs[v].Merge([&](OpId, double, const std::vector<double>& need) {
      for (int32_t p = 0; p < n; ++p) transfers.push_back({home, cand.devices[p], static_cast<int64_t>(need[p])});
    });
    outputs[v].Merge([&](OpId, double largest, const std::vector<double>& share) {
      for (int32_t p = 0; p < n; ++p)
        if (share[p] > 0) transfers.push_back({cand.devices[p], home, static_cast<int64_t>(largest * share[p])});
    });
    const double ring_total = ring_bytes + (v == 0 ? 0.0 : legal_missing_bytes);
    seconds[v] = ConcurrentTransferTime(*topology_, transfers) +
                 (ring_total > 0 ? RingTime(*topology_, ring, static_cast<int64_t>(ring_total / n)) : 0.0);
  }
  star_reshard_seconds_[cell] = seconds[0];
  uniform_star_reshard_seconds_[cell] = seconds[1];
}

}  // namespace devplace

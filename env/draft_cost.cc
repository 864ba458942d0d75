#include "env/draft_cost.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace devplace {

namespace {

// The axis a layout slices a tensor along; kWhole: every device of the layout holds (or needs) all of it.
enum class Axis : uint8_t { kWhole, kSample, kAttribute, kFeature };

// How an action lays a tensor out: its devices, each holding (or needing) slice p of `axis` when sliced.
struct Layout {
  std::vector<DeviceId> devices;
  Axis axis = Axis::kWhole;
};

Axis SliceAxis(DimKind kind) {
  switch (kind) {
    case DimKind::kSample: return Axis::kSample;
    case DimKind::kAttribute: return Axis::kAttribute;
    case DimKind::kParameter:
    case DimKind::kReduction: return Axis::kFeature;
  }
  return Axis::kWhole;
}

// The layout of action `a`'s output (producer) or of what it needs of its input (consumer).
Layout ActionLayout(const PlacementGame& game, int32_t a, bool producer) {
  if (a < game.num_devices()) return {{static_cast<DeviceId>(a)}, Axis::kWhole};
  const SplitCandidate& c = game.candidate(a - game.num_devices());
  Layout layout{c.devices, Axis::kSample};
  if (!c.kind) return layout;
  // A parameter split needs its input whole and slices its output along the features; a reduction split slices
  // its input along the features and ends with its output whole.
  const bool whole = *c.kind == (producer ? DimKind::kReduction : DimKind::kParameter);
  layout.axis = whole ? Axis::kWhole : SliceAxis(*c.kind);
  return layout;
}

// Slice [begin, end) of [0, 1) of position p of n.
std::pair<double, double> Slice(size_t p, size_t n) {
  return {static_cast<double>(p) / static_cast<double>(n), static_cast<double>(p + 1) / static_cast<double>(n)};
}

}  // namespace

std::vector<double> ActionReshardSecondsPerByte(const PlacementGame& game) {
  const int32_t actions = game.num_actions(), devices = game.num_devices();
  const Topology& topology = game.topology();
  constexpr int64_t kProbe = int64_t{1} << 20;
  std::vector<double> per_byte(static_cast<size_t>(devices) * devices, 0.0);  // [src x dst]
  for (DeviceId i = 0; i < devices; ++i)
    for (DeviceId j = 0; j < devices; ++j)
      if (i != j)
        per_byte[static_cast<size_t>(i) * devices + j] =
            topology.transfer_time_estimate(i, j, kProbe) / static_cast<double>(kProbe);
  std::vector<Layout> produced(static_cast<size_t>(actions)), needed(static_cast<size_t>(actions));
  for (int32_t a = 0; a < actions; ++a) {
    produced[a] = ActionLayout(game, a, /*producer=*/true);
    needed[a] = ActionLayout(game, a, /*producer=*/false);
  }
  std::vector<double> result(static_cast<size_t>(actions) * actions, 0.0);
  std::vector<int32_t> held_at(static_cast<size_t>(devices));  // position in the producer's layout or -1
  for (int32_t b = 0; b < actions; ++b) {
    const Layout& from = produced[b];
    std::fill(held_at.begin(), held_at.end(), -1);
    for (size_t p = 0; p < from.devices.size(); ++p) held_at[from.devices[p]] = static_cast<int32_t>(p);
    for (int32_t a = 0; a < actions; ++a) {
      const Layout& to = needed[a];
      double slowest = 0.0, total = 0.0;
      for (size_t q = 0; q < to.devices.size(); ++q) {
        const DeviceId j = to.devices[q];
        const auto need = to.axis == Axis::kWhole ? std::pair{0.0, 1.0} : Slice(q, to.devices.size());
        const double need_size = need.second - need.first;
        double have = 0.0;
        if (held_at[j] >= 0) {
          const auto hold = from.axis == Axis::kWhole ? std::pair{0.0, 1.0}
                                                      : Slice(static_cast<size_t>(held_at[j]), from.devices.size());
          const double hold_size = hold.second - hold.first;
          if (from.axis == Axis::kWhole)
            have = need_size;
          else if (to.axis == Axis::kWhole)
            have = hold_size;
          else if (from.axis == to.axis)
            have = std::max(0.0, std::min(need.second, hold.second) - std::max(need.first, hold.first));
          else
            have = need_size * hold_size;
        }
        const double missing = need_size - have;
        if (missing <= 1e-12) continue;
        double fastest = std::numeric_limits<double>::infinity();
        for (DeviceId i : from.devices)
          if (i != j) fastest = std::min(fastest, per_byte[static_cast<size_t>(i) * devices + j]);
        const double seconds = missing * fastest;
        slowest = std::max(slowest, seconds);
        total += seconds;
      }
      result[static_cast<size_t>(b) * actions + a] =
          std::max(slowest, total / static_cast<double>(from.devices.size()));
    }
  }
  return result;
}

std::vector<double> GroupEdgeBytes(const PlacementGame& game) {
  const Graph& g = game.graph();
  const std::vector<int32_t>& src = game.edge_src();
  const std::vector<int32_t>& dst = game.edge_dst();
  const std::vector<int32_t>& group_of = game.groups().group_of_op;
  std::vector<double> bytes(src.size(), 0.0);
  std::vector<std::pair<int32_t, int64_t>> into;  // (consumer group, largest bytes) of one producer op
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const int32_t from = group_of[op];
    into.clear();
    for (int32_t e : g.out_edges(op)) {
      const int32_t to = group_of[g.edge(e).dst];
      if (to != from) into.emplace_back(to, g.edge(e).bytes);
    }
    if (into.empty()) continue;
    std::sort(into.begin(), into.end());
    // The group edges out of `from`: a run of the (src, dst)-sorted lists, sorted by dst.
    const auto [first, last] = std::equal_range(src.begin(), src.end(), from);
    const auto dst_first = dst.begin() + (first - src.begin()), dst_last = dst.begin() + (last - src.begin());
    for (size_t k = 0; k < into.size(); ++k) {
      if (k + 1 < into.size() && into[k + 1].first == into[k].first) continue;  // the last holds the largest
      const auto pos = std::lower_bound(dst_first, dst_last, into[k].first);
      bytes[static_cast<size_t>(pos - dst.begin())] += static_cast<double>(into[k].second);
    }
  }
  return bytes;
}

}  // namespace devplace

#include "core/mesh_layout.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "core/check.h"
#include "core/device_order.h"

namespace devplace {
namespace {

constexpr size_t kMaxExhaustive = 8;  // 7! layouts are scored exhaustively; larger meshes start from candidates
constexpr int kMaxPasses = 50;
constexpr double kTolerance = 1e-9;  // relative: times closer than this are equal (rounding of sums)

// Prices layouts of one mesh shape over one device list: a layout is `order`, order[p] = the index (into the
// sorted device list) of the device at row-major position p.
class AxisRingScorer {
 public:
  AxisRingScorer(const Topology& topology, const std::vector<int64_t>& shape, const std::vector<DeviceId>& devices,
                 int64_t bytes)
      : meter_(topology, devices), n_(devices.size()), latency_(n_ * n_, 0.0), bytes_(static_cast<double>(bytes)) {
    for (size_t i = 0; i < n_; ++i)
      for (size_t j = 0; j < n_; ++j)
        for (LinkId l : topology.route(devices[i], devices[j]))
          latency_[i * n_ + j] += topology.link(l).latency + topology.link(l).message_cost;
    int64_t stride = 1;
    axes_.resize(shape.size());
    for (size_t a = shape.size(); a-- > 0;) {
      Axis& axis = axes_[a];
      axis.extent = shape[a];
      // Member k of a group sits `stride` positions after member k - 1; the first members are the positions whose
      // coordinate along this axis is 0.
      for (int64_t p = 0; p < static_cast<int64_t>(n_) && axis.extent > 1; ++p) {
        if ((p / stride) % axis.extent != 0) continue;
        for (int64_t k = 0; k < axis.extent; ++k)
          axis.pairs.push_back({p + k * stride, p + ((k + 1) % axis.extent) * stride});
      }
      stride *= shape[a];
    }
  }

  // Each axis's ring all-reduce time (MeshAxisRingTimes) of the layout `order`, into `times`.
  void Times(const std::vector<int32_t>& order, std::vector<double>* times) {
    times->assign(axes_.size(), 0.0);
    for (size_t a = 0; a < axes_.size(); ++a) {
      const Axis& axis = axes_[a];
      if (axis.extent < 2) continue;
      scratch_.clear();
      double latency = 0.0;
      for (auto [p, q] : axis.pairs) {
        const auto i = static_cast<size_t>(order[p]), j = static_cast<size_t>(order[q]);
        scratch_.push_back({i, j});
        latency = std::max(latency, latency_[i * n_ + j]);
      }
      const double per_byte = meter_.SecondsPerByte(scratch_);
      const double step = per_byte > 0.0 ? latency + bytes_ / static_cast<double>(axis.extent) * per_byte : 0.0;
      (*times)[a] = 2.0 * static_cast<double>(axis.extent - 1) * step;
    }
  }

 private:
  struct Axis {
    int64_t extent = 1;
    std::vector<std::pair<int64_t, int64_t>> pairs;  // (position, the next position of its group)
  };
  LinkLoadMeter meter_;
  size_t n_;
  std::vector<double> latency_;  // route latency (latencies and per-message costs) of (i, j), at i * n + j
  double bytes_;
  std::vector<Axis> axes_;
  std::vector<std::pair<size_t, size_t>> scratch_;
};

// Keeps the best layout seen: the least sum of the axes' times among layouts no axis of which is slower than in
// id order; a later layout replaces it only when strictly better.
class BestLayout {
 public:
  BestLayout(AxisRingScorer* scorer, std::vector<int32_t> id_order) : scorer_(scorer), order_(std::move(id_order)) {
    scorer_->Times(order_, &limit_);
    sum_ = std::accumulate(limit_.begin(), limit_.end(), 0.0);
  }

  // Takes `order` when it is better; returns whether it did.
  bool Offer(const std::vector<int32_t>& order) {
    scorer_->Times(order, &times_);
    for (size_t a = 0; a < times_.size(); ++a)
      if (times_[a] > limit_[a] * (1 + kTolerance)) return false;
    const double sum = std::accumulate(times_.begin(), times_.end(), 0.0);
    if (sum >= sum_ * (1 - kTolerance)) return false;
    sum_ = sum;
    order_ = order;
    return true;
  }

  const std::vector<int32_t>& order() const { return order_; }

 private:
  AxisRingScorer* scorer_;
  std::vector<int32_t> order_;
  std::vector<double> limit_;  // id order's times
  std::vector<double> times_;
  double sum_ = 0.0;
};

// The indices (into the sorted list `devices`) of `subset`, in the order given.
std::vector<int32_t> IndicesOf(const std::vector<DeviceId>& devices, const std::vector<DeviceId>& subset) {
  std::vector<int32_t> out;
  for (DeviceId d : subset)
    out.push_back(static_cast<int32_t>(std::lower_bound(devices.begin(), devices.end(), d) - devices.begin()));
  return out;
}

// The starting layouts beyond kMaxExhaustive devices (FastMeshLayout), id order excepted.
std::vector<std::vector<int32_t>> StartingLayouts(const Topology& topology, const std::vector<int64_t>& shape,
                                                  const std::vector<DeviceId>& devices) {
  std::vector<std::vector<int32_t>> starts;
  starts.push_back(IndicesOf(devices, FastRingOrder(topology, devices)));
  const auto row = static_cast<size_t>(shape.back());
  std::vector<DeviceId> rows;
  for (size_t begin = 0; begin < devices.size(); begin += row) {
    const std::vector<DeviceId> ring = FastRingOrder(topology, {devices.begin() + begin, devices.begin() + begin + row});
    rows.insert(rows.end(), ring.begin(), ring.end());
  }
  starts.push_back(IndicesOf(devices, rows));
  const std::vector<std::vector<DeviceId>> hosts = DevicesByHost(topology, devices);
  const size_t per_host = hosts.front().size();
  if (hosts.size() < 2 || std::any_of(hosts.begin(), hosts.end(), [&](const auto& h) { return h.size() != per_host; }))
    return starts;
  int64_t inner = 1;
  for (size_t k = shape.size(); k-- > 1;) {
    inner *= shape[k];
    if (inner != static_cast<int64_t>(per_host)) continue;
    const std::vector<int64_t> host_shape(shape.begin() + static_cast<std::ptrdiff_t>(k), shape.end());
    std::vector<DeviceId> blocks;
    for (const std::vector<DeviceId>& host : hosts) {
      const std::vector<DeviceId> block = FastMeshLayout(topology, host_shape, host);
      blocks.insert(blocks.end(), block.begin(), block.end());
    }
    starts.push_back(IndicesOf(devices, blocks));
    break;
  }
  return starts;
}

}  // namespace

std::vector<double> MeshAxisRingTimes(const Topology& topology, const std::vector<int64_t>& shape,
                                      const std::vector<DeviceId>& devices, int64_t bytes) {
  std::vector<DeviceId> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  AxisRingScorer scorer(topology, shape, sorted, bytes);
  std::vector<double> times;
  scorer.Times(IndicesOf(sorted, devices), &times);
  return times;
}

std::vector<DeviceId> FastMeshLayout(const Topology& topology, const std::vector<int64_t>& shape,
                                     std::vector<DeviceId> devices) {
  const size_t n = devices.size();
  DEVPLACE_CHECK(static_cast<int64_t>(n) == std::accumulate(shape.begin(), shape.end(), int64_t{1},
                                                            std::multiplies<int64_t>()),
                 "FastMeshLayout: the device count is not the product of the shape");
  std::sort(devices.begin(), devices.end());
  if (std::count_if(shape.begin(), shape.end(), [](int64_t e) { return e > 1; }) < 2)
    return FastRingOrder(topology, std::move(devices));
  AxisRingScorer scorer(topology, shape, devices, kMeshLayoutBytes);
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  BestLayout best(&scorer, order);
  if (n <= kMaxExhaustive) {
    // Shifting every coordinate cyclically along an axis keeps every group and its ring (rotated), so every layout
    // prices as one with the first device at position 0, which also comes first in lexicographic order: the
    // search over those finds the same layout as over all n! of them.
    while (std::next_permutation(order.begin() + 1, order.end())) best.Offer(order);
  } else {
    for (const std::vector<int32_t>& start : StartingLayouts(topology, shape, devices)) best.Offer(start);
    bool improved = static_cast<int64_t>(n) <= kMaxMeshLayoutSwapDevices;
    for (int pass = 0; improved && pass < kMaxPasses; ++pass) {
      improved = false;
      order = best.order();
      for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) {
          std::swap(order[i], order[j]);
          if (best.Offer(order)) improved = true;
          else std::swap(order[i], order[j]);
        }
    }
  }
  std::vector<DeviceId> result(n);
  for (size_t p = 0; p < n; ++p) result[p] = devices[best.order()[p]];
  return result;
}

std::vector<DeviceId> DefaultMeshDevices(const Topology& topology, const std::vector<int64_t>& shape) {
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  DEVPLACE_CHECK(n <= topology.num_devices(), "DefaultMeshDevices: the mesh has more positions than devices");
  std::vector<DeviceId> devices(static_cast<size_t>(n));
  std::iota(devices.begin(), devices.end(), 0);
  return FastMeshLayout(topology, shape, std::move(devices));
}

}  // namespace devplace

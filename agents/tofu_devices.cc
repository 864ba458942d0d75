// The device order of Tofu's recursive bisection, and the price of transfers that run at the same time (see
// TofuDeviceOrder and TofuConcurrentPrice in tofu_dp.h).
#include <algorithm>
#include <bit>
#include <utility>

#include "agents/tofu_dp.h"
#include "core/check.h"

namespace devplace {
namespace {

constexpr int kMaxExhaustive = 8;  // 8! orders are scored exhaustively; larger machines use local search
constexpr int kMaxPasses = 50;
constexpr double kTolerance = 1e-9;  // relative: scores closer than this are equal (rounding of sums)

// Link loads of transfers between devices of a fixed list, addressed by index into the list.
class LoadMeter {
 public:
  LoadMeter(const Topology& topology, const std::vector<DeviceId>& devices)
      : n_(devices.size()), routes_(n_ * n_), load_(static_cast<size_t>(topology.num_links()), 0.0) {
    for (size_t i = 0; i < n_; ++i)
      for (size_t j = 0; j < n_; ++j)
        for (LinkId l : topology.route(devices[i], devices[j]))
          routes_[i * n_ + j].push_back({l, 1.0 / topology.link(l).bandwidth});
  }

  // Seconds per byte when every transfer (i, j) moves one byte at once: the busiest link's share.
  template <class Pairs>
  double SecondsPerByte(const Pairs& pairs) {
    double worst = 0.0;
    for (auto [i, j] : pairs)
      for (auto [link, inv_bw] : routes_[i * n_ + j]) {
        if (load_[link] == 0.0) touched_.push_back(link);
        load_[link] += inv_bw;
        worst = std::max(worst, load_[link]);
      }
    for (LinkId l : touched_) load_[l] = 0.0;
    touched_.clear();
    return worst;
  }

 private:
  size_t n_;
  std::vector<std::vector<std::pair<LinkId, double>>> routes_;
  std::vector<double> load_;
  std::vector<LinkId> touched_;
};

bool Better(const std::pair<double, double>& a, const std::pair<double, double>& b) {
  if (a.first < b.first * (1 - kTolerance)) return true;
  if (a.first > b.first * (1 + kTolerance)) return false;
  return a.second < b.second * (1 - kTolerance);
}

// Score of an order (indices into the device list), compared lexicographically: the per-byte time of one step
// of a ring collective along it, then the sum over the level bits of the per-byte time of every pair that bit
// separates exchanging at once.
std::pair<double, double> Score(LoadMeter* meter, const std::vector<int32_t>& order,
                                std::vector<std::pair<size_t, size_t>>* scratch) {
  const size_t n = order.size();
  scratch->clear();
  for (size_t i = 0; i < n; ++i) scratch->push_back({static_cast<size_t>(order[i]), static_cast<size_t>(order[(i + 1) % n])});
  const double ring = meter->SecondsPerByte(*scratch);
  double cuts = 0.0;
  for (size_t bit = 1; bit < n; bit <<= 1) {
    scratch->clear();
    for (size_t i = 0; i < n; ++i)
      scratch->push_back({static_cast<size_t>(order[i]), static_cast<size_t>(order[i ^ bit])});
    cuts += meter->SecondsPerByte(*scratch);
  }
  return {ring, cuts};
}

}  // namespace

TofuTransferPrice TofuConcurrentPrice(const Topology& topology,
                                      std::span<const std::pair<DeviceId, DeviceId>> transfers) {
  TofuTransferPrice price;
  std::vector<DeviceId> devices;
  std::vector<std::pair<size_t, size_t>> pairs;
  for (auto [a, b] : transfers) {
    price.latency = std::max(price.latency, topology.transfer_time_estimate(a, b, 0));
    devices.push_back(a);
    devices.push_back(b);
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  auto index = [&](DeviceId d) {
    return static_cast<size_t>(std::lower_bound(devices.begin(), devices.end(), d) - devices.begin());
  };
  for (auto [a, b] : transfers) pairs.push_back({index(a), index(b)});
  LoadMeter meter(topology, devices);
  price.seconds_per_byte = meter.SecondsPerByte(pairs);
  return price;
}

std::vector<DeviceId> TofuDeviceOrder(const Topology& topology, std::vector<DeviceId> devices) {
  const size_t n = devices.size();
  DEVPLACE_CHECK(n >= 1 && std::has_single_bit(n), "a power of two of devices");
  std::sort(devices.begin(), devices.end());
  if (n <= 2) return devices;
  LoadMeter meter(topology, devices);
  std::vector<std::pair<size_t, size_t>> scratch;
  std::vector<int32_t> order(n), best;
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<int32_t>(i);
  best = order;
  std::pair<double, double> best_score = Score(&meter, order, &scratch);
  if (n <= kMaxExhaustive) {
    while (std::next_permutation(order.begin(), order.end())) {
      const std::pair<double, double> s = Score(&meter, order, &scratch);
      if (Better(s, best_score)) {
        best_score = s;
        best = order;
      }
    }
  } else {
    // Swap two positions while that improves the score (first improvement, deterministic).
    bool improved = true;
    for (int pass = 0; improved && pass < kMaxPasses; ++pass) {
      improved = false;
      for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) {
          std::swap(best[i], best[j]);
          const std::pair<double, double> s = Score(&meter, best, &scratch);
          if (Better(s, best_score)) {
            best_score = s;
            improved = true;
          } else {
            std::swap(best[i], best[j]);
          }
        }
    }
  }
  std::vector<DeviceId> result(n);
  for (size_t i = 0; i < n; ++i) result[i] = devices[best[i]];
  return result;
}

}  // namespace devplace

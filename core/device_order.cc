#include "core/device_order.h"

#include <algorithm>
#include <bit>
#include <string>

namespace devplace {
namespace {

constexpr size_t kMaxExhaustive = 8;  // 8! orders are scored exhaustively; larger lists use local search
constexpr int kMaxPasses = 50;
constexpr double kTolerance = 1e-9;  // relative: scores closer than this are equal (rounding of sums)

bool Better(const std::pair<double, double>& a, const std::pair<double, double>& b) {
  if (a.first < b.first * (1 - kTolerance)) return true;
  if (a.first > b.first * (1 + kTolerance)) return false;
  return a.second < b.second * (1 - kTolerance);
}

// Score of an order (indices into the device list), compared lexicographically: the per-byte time of one ring
// step along it, then (for a power of two) the bisection pairs' sum (FastRingOrder).
std::pair<double, double> Score(LinkLoadMeter* meter, const std::vector<int32_t>& order,
                                std::vector<std::pair<size_t, size_t>>* scratch) {
  const size_t n = order.size();
  scratch->clear();
  for (size_t i = 0; i < n; ++i)
    scratch->push_back({static_cast<size_t>(order[i]), static_cast<size_t>(order[(i + 1) % n])});
  const double ring = meter->SecondsPerByte(*scratch);
  double cuts = 0.0;
  if (!std::has_single_bit(n)) return {ring, cuts};
  for (size_t bit = 1; bit < n; bit <<= 1) {
    scratch->clear();
    for (size_t i = 0; i < n; ++i)
      scratch->push_back({static_cast<size_t>(order[i]), static_cast<size_t>(order[i ^ bit])});
    cuts += meter->SecondsPerByte(*scratch);
  }
  return {ring, cuts};
}

// The devices' indices (into `devices`, sorted) grouped by host, hosts in the order of their lowest device, each
// host's own devices in FastRingOrder: a ring along it leaves and enters every host once. Empty for one host.
std::vector<int32_t> HostGroupedOrder(const Topology& topology, const std::vector<DeviceId>& devices) {
  std::vector<std::vector<DeviceId>> hosts = DevicesByHost(topology, devices);
  std::vector<int32_t> order;
  if (hosts.size() < 2) return order;
  for (std::vector<DeviceId>& host : hosts)
    for (DeviceId d : FastRingOrder(topology, std::move(host)))
      order.push_back(static_cast<int32_t>(std::lower_bound(devices.begin(), devices.end(), d) - devices.begin()));
  return order;
}

}  // namespace

std::vector<std::vector<DeviceId>> DevicesByHost(const Topology& topology, const std::vector<DeviceId>& devices) {
  std::vector<std::vector<DeviceId>> hosts;
  std::vector<std::string> names;
  for (DeviceId d : devices) {
    const std::string& host = topology.device(d).host;
    const auto it = std::find(names.begin(), names.end(), host);
    if (it == names.end()) {
      names.push_back(host);
      hosts.push_back({d});
    } else {
      hosts[static_cast<size_t>(it - names.begin())].push_back(d);
    }
  }
  return hosts;
}

LinkLoadMeter::LinkLoadMeter(const Topology& topology, const std::vector<DeviceId>& devices)
    : n_(devices.size()), routes_(n_ * n_), load_(static_cast<size_t>(topology.num_links()), 0.0) {
  for (size_t i = 0; i < n_; ++i)
    for (size_t j = 0; j < n_; ++j)
      for (LinkId l : topology.route(devices[i], devices[j]))
        routes_[i * n_ + j].push_back({l, 1.0 / topology.link(l).bandwidth});
}

double LinkLoadMeter::SecondsPerByte(std::span<const std::pair<size_t, size_t>> pairs) {
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

std::vector<DeviceId> FastRingOrder(const Topology& topology, std::vector<DeviceId> devices) {
  const size_t n = devices.size();
  std::sort(devices.begin(), devices.end());
  if (n <= 2) return devices;
  LinkLoadMeter meter(topology, devices);
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
    // Start from the host-grouped order where it is better than id order (swaps of two devices cannot leave a
    // ring that crosses between hosts at every step: no single swap lowers the busiest host link's load), then
    // swap two positions while that improves the score (first improvement, deterministic).
    if (std::vector<int32_t> grouped = HostGroupedOrder(topology, devices); !grouped.empty()) {
      const std::pair<double, double> s = Score(&meter, grouped, &scratch);
      if (Better(s, best_score)) {
        best_score = s;
        best = std::move(grouped);
      }
    }
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

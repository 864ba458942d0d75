// The device order of Tofu's recursive bisection, and the price of transfers that run at the same time (see
// TofuDeviceOrder and TofuConcurrentPrice in tofu_dp.h), both from core/device_order.h.
#include <algorithm>
#include <bit>
#include <utility>

#include "agents/tofu_dp.h"
#include "core/check.h"
#include "core/device_order.h"

namespace devplace {

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
  LinkLoadMeter meter(topology, devices);
  price.seconds_per_byte = meter.SecondsPerByte(pairs);
  return price;
}

std::vector<DeviceId> TofuDeviceOrder(const Topology& topology, std::vector<DeviceId> devices) {
  DEVPLACE_CHECK(!devices.empty() && std::has_single_bit(devices.size()), "a power of two of devices");
  return FastRingOrder(topology, std::move(devices));
}

}  // namespace devplace

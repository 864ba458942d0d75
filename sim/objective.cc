#include "sim/objective.h"

#include <algorithm>

namespace devplace {

double OverageFraction(const SimResult& result, const Topology& topology) {
  double fraction = 0.0;
  for (DeviceId d = 0; d < static_cast<DeviceId>(result.devices.size()); ++d)
    if (result.devices[d].overage_bytes > 0)
      fraction += static_cast<double>(result.devices[d].overage_bytes) /
                  static_cast<double>(std::max<int64_t>(topology.device(d).memory_bytes, 1));
  return fraction;
}

StepCost CostOf(const SimResult& result, const Topology& topology) {
  return StepCost{result.step_time, result.oom, result.oom ? OverageFraction(result, topology) : 0.0};
}

StepCost CostOf(double step_time, const std::vector<int64_t>& peaks, const Topology& topology) {
  StepCost cost{step_time, false, 0.0};
  for (DeviceId d = 0; d < static_cast<DeviceId>(peaks.size()); ++d) {
    const int64_t room = topology.device(d).memory_bytes;
    if (peaks[d] <= room) continue;
    cost.oom = true;
    cost.overage += static_cast<double>(peaks[d] - room) / static_cast<double>(std::max<int64_t>(room, 1));
  }
  return cost;
}

}  // namespace devplace

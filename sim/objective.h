// The objective every search and environment minimises (docs/baselines.md, "The objective").
//
// A simulated step is summarised by its StepCost: step time, whether it runs out of memory, and by how much.
// Steps are ranked by operator<: every step that fits ranks before every step that runs out of memory; steps
// that fit rank by step time; steps that run out of memory rank by overage (less is better), then step time.
// Searches keep the best strategy by this order. Where a number is needed (rewards of the environments,
// Metropolis-Hastings acceptance in MCMC), StepCost::Penalised gives the penalised time.
#pragma once

#include <tuple>

#include "core/topology.h"
#include "sim/simulator.h"

namespace devplace {

struct StepCost {
  double step_time = 0.0;  // seconds
  bool oom = false;        // some device's peak memory exceeds its capacity
  // Sum over devices of overage_bytes / capacity (0 when the step fits; > 0 when it does not).
  double overage = 0.0;

  // The penalised time, in seconds:
  //   step_time                                                           when the step fits,
  //   step_time + penalty_factor x reference_time x (1 + overage)         when it runs out of memory.
  // reference_time sets the penalty's unit (environments: the fastest single-device step time; MCMC: its start's
  // step time); penalty_factor >= 0. With penalty_factor x reference_time above the step times in play, the
  // number orders steps as operator< does.
  double Penalised(double reference_time, double penalty_factor) const {
    return oom ? step_time + penalty_factor * reference_time * (1.0 + overage) : step_time;
  }

  bool operator==(const StepCost&) const = default;
  // True when `a` ranks strictly before (is better than) `b`: fits before OOM, then less overage, then faster.
  friend bool operator<(const StepCost& a, const StepCost& b) {
    return std::tuple(a.oom, a.overage, a.step_time) < std::tuple(b.oom, b.overage, b.step_time);
  }
};

// Sum over devices of overage_bytes / the device's capacity (topology indexes result.devices).
double OverageFraction(const SimResult& result, const Topology& topology);

// The cost of a simulated step on `topology`.
StepCost CostOf(const SimResult& result, const Topology& topology);
// The same from the step time and the per-device peaks alone (DeltaSimulator::device_peaks), without a SimResult.
StepCost CostOf(double step_time, const std::vector<int64_t>& peaks, const Topology& topology);

}  // namespace devplace

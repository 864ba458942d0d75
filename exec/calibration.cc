#include "exec/calibration.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/check.h"
#include "core/quantile.h"
#include "exec/backend.h"
#include "exec/collectives.h"
#include "exec/ready_queue.h"
#include "exec/task_program.h"
#include "exec/tensor_util.h"

namespace devplace {

namespace {

constexpr int32_t kWarmup = 2;

at::Tensor Floats(int64_t bytes, const at::Device& device) {
  return exec::SeededTensor({std::max<int64_t>(1, bytes / 4)}, at::kFloat, device, static_cast<uint64_t>(bytes), 1.0, 1);
}

// A copy into fresh memory of `device`, exactly as a worker takes in a tensor from another device.
at::Tensor CopyTo(const at::Tensor& t, const at::Device& device) {
  at::Tensor out = at::empty(t.sizes(), t.options().device(device));
  out.copy_(t);
  exec::SyncDevice(device);
  return out;
}

// Round trips between a worker for `a` and one for `b`, moving tensors exactly as the executor does: a hands a
// tensor of `bytes` over through b's ready queue and b copies it into its own memory; b answers with a 4-byte tensor
// the same way. Returns the median round-trip time per size.
std::vector<double> RoundTrips(const std::vector<int64_t>& sizes, const at::Device& a, int core_a, const at::Device& b,
                               int core_b, int32_t repeats) {
  exec::ReadyQueue to_a, to_b;
  std::atomic<bool> never{false};
  at::Tensor handed_to_b, handed_to_a;
  std::thread responder([&] {
    exec::SetUpWorkerThread(b, core_b);
    const at::Tensor token = Floats(4, b);
    while (to_b.Pop(never) >= 0) {
      at::Tensor received = CopyTo(handed_to_b, b);
      handed_to_b = at::Tensor();
      handed_to_a = token;
      to_a.Push(0);
    }
  });
  std::vector<double> medians;
  std::thread initiator([&] {
    exec::SetUpWorkerThread(a, core_a);
    for (int64_t bytes : sizes) {
      const at::Tensor source = Floats(bytes, a);
      std::vector<double> times;
      for (int32_t r = 0; r < kWarmup + repeats; ++r) {
        const double t0 = exec::NowSeconds();
        handed_to_b = source;
        to_b.Push(0);
        to_a.Pop(never);
        at::Tensor answer = CopyTo(handed_to_a, a);
        const double t1 = exec::NowSeconds();
        if (r >= kWarmup) times.push_back(t1 - t0);
      }
      medians.push_back(Median(times));
    }
    to_b.Push(-1);
  });
  initiator.join();
  responder.join();
  return medians;
}

// Collective steps between a worker for `a` and one for `b` as a partitioned step runs them: per size (the whole
// tensor's bytes), each member's worker writes a fresh tensor (as a backward op writes its weight gradient) and the
// executor's task runtime then runs the two-member ring all-reduce over them (exec/collectives.h: each step a task
// on the receiving worker that copies a chunk of the other member's tensor and adds or stores it). Appends, per
// size, the median step time received by b (from a) to `to_b` and by a (from b) to `to_a`, with the chunk's bytes.
Status RingSteps(const std::vector<int64_t>& sizes, const at::Device& a, int core_a, const at::Device& b, int core_b,
                 int32_t repeats, std::vector<CopyPoint>* to_b, std::vector<CopyPoint>* to_a) {
  const std::vector<at::Device> devices = {a, b};
  for (int64_t bytes : sizes) {
    const int64_t floats = std::max<int64_t>(2, bytes / 4);
    exec::TaskProgram program;
    exec::CollectiveGroup group;
    group.devices = {0, 1};
    group.axis = 0;
    group.extent = floats;
    group.bytes = floats * 4;
    group.label = "calibration";
    std::vector<int32_t> written;
    for (DeviceId m = 0; m < 2; ++m) {
      group.slots.push_back(program.AddSlot());
      exec::Task fill;
      fill.device = m;
      fill.unit = m;
      written.push_back(program.Add(std::move(fill)));
    }
    exec::AppendAllReduce(&program, group, written);
    exec::TaskRuntime runtime(program, devices, {core_a, core_b});
    const exec::UnitRunner fill = [&](int32_t unit, std::vector<at::Tensor>& slots) {
      slots[group.slots[unit]] =
          at::full({floats}, 1.0 + unit, at::TensorOptions().dtype(at::kFloat).device(devices[unit]));
    };
    std::vector<double> into_b, into_a;
    for (int32_t r = 0; r < kWarmup + repeats; ++r) {
      std::vector<at::Tensor> slots;
      exec::TaskTimes times;
      const std::string error = runtime.Step(fill, &slots, &times);
      if (!error.empty()) return Error{"calibrating collective steps: " + error};
      if (r < kWarmup) continue;
      for (size_t t = 0; t < program.tasks.size(); ++t)
        if (program.tasks[t].kind == exec::TaskKind::kReceive)
          (program.tasks[t].device == 1 ? into_b : into_a).push_back(times.end[t] - times.start[t]);
    }
    const int64_t chunk = floats / 2 * 4;
    to_b->push_back({chunk, std::max(1e-9, Median(into_b))});
    to_a->push_back({chunk, std::max(1e-9, Median(into_a))});
  }
  return Status::Ok();
}

// Peak f32 FLOP/s (best of three n^3 matmuls) and memory bandwidth (best of three copies of 64 MiB on a CPU core,
// 1 GiB on a GPU) on one device. A GPU reaches its peak only on large products: there n is at least 8192, and the
// kernels are timed with exec::TimeOnDevice (CUDA events where the LibTorch has them).
void MeasureDevice(const at::Device& device, int core, int64_t n, double* flops, double* bandwidth) {
  std::thread worker([&] {
    exec::SetUpWorkerThread(device, core);
    if (device.is_cuda()) n = std::max<int64_t>(n, 8192);
    const at::Tensor a = exec::SeededTensor({n, n}, at::kFloat, device, 1, 1.0, 1);
    const at::Tensor b = exec::SeededTensor({n, n}, at::kFloat, device, 2, 1.0, 1);
    double best = 1e30;
    for (int r = 0; r < 4; ++r) {
      const double seconds = exec::TimeOnDevice(device, [&] { at::Tensor c = at::mm(a, b); });
      if (r > 0) best = std::min(best, seconds);
    }
    *flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / best;
    const int64_t bytes = device.is_cuda() ? int64_t{1} << 30 : int64_t{64} << 20;
    const at::Tensor src = Floats(bytes, device);
    at::Tensor dst = at::empty_like(src);
    best = 1e30;
    for (int r = 0; r < 4; ++r) {
      const double seconds = exec::TimeOnDevice(device, [&] { dst.copy_(src); });
      if (r > 0) best = std::min(best, seconds);
    }
    *bandwidth = 2.0 * static_cast<double>(bytes) / best;
  });
  worker.join();
}

}  // namespace

std::vector<CopyPoint> OneWayPoints(const std::vector<int64_t>& sizes, const std::vector<double>& round_trips) {
  DEVPLACE_CHECK(round_trips.size() == sizes.size() + 1, "a token round trip, then one per size");
  // A round trip is one transfer of the size plus one of the token; a token round trip is two token transfers.
  const double token_one_way = round_trips[0] / 2.0;
  std::vector<CopyPoint> points;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double one_way = round_trips[i + 1] - token_one_way;
    if (one_way > 0 && std::isfinite(one_way)) points.push_back({sizes[i], one_way});
  }
  return points;
}

Status CheckPhysicalFit(const PairCalibration& fit, const std::string& what) {
  if (fit.points.size() >= 2 && fit.latency > 0 && fit.latency < 1.0 && fit.bandwidth > 1e6 && fit.bandwidth < 1e13)
    return Status::Ok();
  return Error{what + ": no physical fit (" + std::to_string(fit.latency * 1e6) + " us + bytes / " +
               std::to_string(fit.bandwidth / 1e9) + " GB/s from " + std::to_string(fit.points.size()) +
               " usable points; a loaded machine? measure again when it is idle)"};
}

void FitLinkModel(PairCalibration* pair) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const CopyPoint& p : pair->points) {
    if (!(p.seconds > 0)) continue;  // no time: no weight (OneWayPoints drops them)
    const double w = 1.0 / (p.seconds * p.seconds);
    const double x = static_cast<double>(p.bytes);
    sw += w;
    sx += w * x;
    sy += w * p.seconds;
    sxx += w * x * x;
    sxy += w * x * p.seconds;
  }
  const double det = sw * sxx - sx * sx;
  double slope = det > 0 ? (sw * sxy - sx * sy) / det : 0.0;
  if (slope <= 0 && !pair->points.empty()) {
    // Noise (e.g. a loaded machine) hid the per-byte cost: take it from the smallest and the largest size, or
    // failing that, the largest size's time alone (an upper bound), rather than an unphysical bandwidth.
    auto [small, large] = std::minmax_element(pair->points.begin(), pair->points.end(),
                                              [](const CopyPoint& a, const CopyPoint& b) { return a.bytes < b.bytes; });
    if (large->bytes > small->bytes)
      slope = (large->seconds - small->seconds) / static_cast<double>(large->bytes - small->bytes);
    if (slope <= 0) slope = large->seconds / static_cast<double>(std::max<int64_t>(1, large->bytes));
  }
  if (slope <= 0) slope = 1e-12;  // no points
  const double intercept = (sy - slope * sx) / sw;
  pair->latency = std::max(1e-8, intercept);
  pair->bandwidth = 1.0 / slope;
  pair->max_relative_error = 0.0;
  for (const CopyPoint& p : pair->points) {
    if (!(p.seconds > 0)) continue;
    const double model = pair->latency + static_cast<double>(p.bytes) / pair->bandwidth;
    pair->max_relative_error = std::max(pair->max_relative_error, std::abs(model - p.seconds) / p.seconds);
  }
}

Status ValidateCalibrationOptions(const CalibrationOptions& options) {
  if (options.min_bytes < 4) return Error{"calibration options: min_bytes must be >= 4"};
  if (options.max_bytes < options.min_bytes) return Error{"calibration options: max_bytes must be >= min_bytes"};
  if (options.max_bytes > (int64_t{1} << 32)) return Error{"calibration options: max_bytes must be <= 4 GiB"};
  if (options.repeats < 1) return Error{"calibration options: repeats must be >= 1"};
  if (options.matmul_size < 16) return Error{"calibration options: matmul_size must be >= 16"};
  if (options.backend != "auto" && options.backend != "cpu" && options.backend != "cuda")
    return Error{"calibration options: backend '" + options.backend + "' is not one of auto, cpu, cuda"};
  return Status::Ok();
}

Expected<CalibrationResult> Calibrate(const Topology& topology, const CalibrationOptions& options) {
  if (Status s = ValidateCalibrationOptions(options); !s.ok()) return s.error();
  if (topology.num_devices() < 2)
    return Error{"topology '" + topology.name() + "': calibration needs at least two devices"};
  Expected<BackendInfo> backend = ResolveBackend(options.backend, topology);
  if (!backend.ok()) return backend.error();
  exec::ConfigureTorch();
  CalibrationResult result;
  result.backend = *backend;
  std::vector<int64_t> sizes;
  for (int64_t s = options.min_bytes; s <= options.max_bytes; s *= 4) sizes.push_back(s);
  const int64_t token = 4;
  std::vector<int64_t> with_token = {token};
  with_token.insert(with_token.end(), sizes.begin(), sizes.end());
  const DeviceId measured = std::min<DeviceId>(4, topology.num_devices());
  for (DeviceId a = 0; a < measured; ++a) {
    for (DeviceId b = 0; b < measured; ++b) {
      if (a == b) continue;
      const std::vector<double> rt = RoundTrips(with_token, exec::TorchDevice(*backend, a),
                                                exec::WorkerCore(*backend, a, options.pin_threads),
                                                exec::TorchDevice(*backend, b),
                                                exec::WorkerCore(*backend, b, options.pin_threads), options.repeats);
      PairCalibration pair;
      pair.src = a;
      pair.dst = b;
      pair.points = OneWayPoints(sizes, rt);
      FitLinkModel(&pair);
      if (Status s = CheckPhysicalFit(pair, "calibrating copies " + topology.device(a).name + " -> " +
                                                topology.device(b).name);
          !s)
        return s.error();
      result.pairs.push_back(std::move(pair));
    }
  }
  for (DeviceId a = 0; a < measured; ++a)
    for (DeviceId b = a + 1; b < measured; ++b) {
      PairCalibration to_b{a, b}, to_a{b, a};
      const Status ring = RingSteps(sizes, exec::TorchDevice(*backend, a),
                                    exec::WorkerCore(*backend, a, options.pin_threads), exec::TorchDevice(*backend, b),
                                    exec::WorkerCore(*backend, b, options.pin_threads), options.repeats,
                                    &to_b.points, &to_a.points);
      if (!ring.ok()) return ring.error();
      for (PairCalibration* fit : {&to_b, &to_a}) {
        FitLinkModel(fit);
        if (Status s = CheckPhysicalFit(*fit, "calibrating collective steps " + topology.device(fit->src).name +
                                                  " -> " + topology.device(fit->dst).name);
            !s)
          return s.error();
      }
      result.steps.push_back(std::move(to_b));
      result.steps.push_back(std::move(to_a));
    }
  for (DeviceId d = 0; d < topology.num_devices(); ++d) {
    double flops = 0, bandwidth = 0;
    MeasureDevice(exec::TorchDevice(*backend, d), exec::WorkerCore(*backend, d, options.pin_threads),
                  options.matmul_size, &flops, &bandwidth);
    result.peak_flops.push_back(flops);
    result.memory_bandwidth.push_back(bandwidth);
  }
  return result;
}

Expected<Topology> ApplyCalibration(const Topology& topology, const CalibrationResult& result) {
  if (result.peak_flops.size() != static_cast<size_t>(topology.num_devices()) ||
      result.memory_bandwidth.size() != result.peak_flops.size())
    return Error{"topology '" + topology.name() + "': the calibration was measured on a machine with " +
                 std::to_string(result.peak_flops.size()) + " devices, not " + std::to_string(topology.num_devices())};
  if (result.pairs.empty()) return Error{"topology '" + topology.name() + "': the calibration has no measured pair"};
  std::vector<double> latency_sum(topology.num_links(), 0.0), bandwidth_sum(topology.num_links(), 0.0);
  std::vector<int32_t> uses(topology.num_links(), 0);
  double mean_latency = 0.0, mean_bandwidth = 0.0;
  int32_t route_links = 0;
  for (const PairCalibration& p : result.pairs) {
    if (p.src >= topology.num_devices() || p.dst >= topology.num_devices() || p.src == p.dst)
      return Error{"topology '" + topology.name() + "': calibration pair " + std::to_string(p.src) + " -> " +
                   std::to_string(p.dst) + " is not a pair of its devices"};
    const auto route = topology.route(p.src, p.dst);
    const double hops = static_cast<double>(route.size());
    for (LinkId l : route) {
      latency_sum[l] += p.latency / hops;
      bandwidth_sum[l] += p.bandwidth * hops;
      ++uses[l];
      mean_latency += p.latency / hops;
      mean_bandwidth += p.bandwidth * hops;
      ++route_links;
    }
  }
  mean_latency /= route_links;
  mean_bandwidth /= route_links;
  std::vector<double> step_sum(topology.num_links(), 0.0), step_bandwidth_sum(topology.num_links(), 0.0);
  std::vector<int32_t> step_uses(topology.num_links(), 0);
  double mean_step = 0.0, mean_step_bandwidth = 0.0;
  int32_t step_links = 0;
  for (const PairCalibration& st : result.steps) {
    auto copy = std::find_if(result.pairs.begin(), result.pairs.end(),
                             [&](const PairCalibration& p) { return p.src == st.src && p.dst == st.dst; });
    if (copy == result.pairs.end())
      return Error{"topology '" + topology.name() + "': collective steps " + std::to_string(st.src) + " -> " +
                   std::to_string(st.dst) + " were measured without the copies between the same devices"};
    const auto route = topology.route(st.src, st.dst);
    const double hops = static_cast<double>(route.size());
    const double fixed = std::max(0.0, st.latency - copy->latency) / hops;
    for (LinkId l : route) {
      step_sum[l] += fixed;
      step_bandwidth_sum[l] += st.bandwidth * hops;
      ++step_uses[l];
      mean_step += fixed;
      mean_step_bandwidth += st.bandwidth * hops;
      ++step_links;
    }
  }
  TopologyBuilder builder(topology.name());
  for (DeviceId d = 0; d < topology.num_devices(); ++d) {
    Device device = topology.device(d);
    if (!exec::TorchDevice(result.backend, d).is_cuda()) device.peak_flops_f16 = result.peak_flops[d];
    else device.peak_flops_f16 *= result.peak_flops[d] / device.peak_flops_f32;
    device.peak_flops_f32 = result.peak_flops[d];
    device.memory_bandwidth = result.memory_bandwidth[d];
    builder.add_device(std::move(device));
  }
  for (const Switch& s : topology.switches()) builder.add_switch(s);
  for (LinkId l = 0; l < topology.num_links(); ++l) {
    Link link = topology.link(l);
    link.latency = uses[l] ? latency_sum[l] / uses[l] : mean_latency;
    link.bandwidth = uses[l] ? bandwidth_sum[l] / uses[l] : mean_bandwidth;
    if (step_links > 0) {
      link.step_cost = step_uses[l] ? step_sum[l] / step_uses[l] : mean_step / step_links;
      link.step_bandwidth = step_uses[l] ? step_bandwidth_sum[l] / step_uses[l] : mean_step_bandwidth / step_links;
    }
    builder.add_link(std::move(link));
  }
  return std::move(builder).Build();
}

}  // namespace devplace

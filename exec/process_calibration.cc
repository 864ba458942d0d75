#include "exec/process_calibration.h"
#include "core/quantile.h"
#include "exec/tensor_util.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

#include "distributed/process_group.h"

namespace devplace {

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The median over `repeats` of `op` on this rank, then the longest over the ranks; starts at a barrier.
Expected<double> TimeOp(ProcessGroup& group, int32_t repeats, const std::function<Status()>& op,
                        const std::string& what) {
  if (Status s = op(); !s) return s.error();  // warm-up (connections, buffers)
  if (Status s = group.Barrier(what); !s) return s.error();
  std::vector<double> times;
  for (int32_t r = 0; r < repeats; ++r) {
    const double t0 = Now();
    if (Status s = op(); !s) return s.error();
    times.push_back(Now() - t0);
  }
  at::Tensor longest = at::full({1}, Median(times), at::kDouble);
  if (Status s = group.AllReduce(longest, ProcessGroup::Reduce::kMax, what); !s) return s.error();
  return longest.item<double>();
}

// Ping-pong of `bytes` between ranks 0 and 1 (the other ranks wait): one round trip.
Status PingPong(ProcessGroup& group, at::Tensor& buffer) {
  const std::string what = "the point-to-point calibration";
  if (group.rank() > 1) return Status::Ok();
  const int32_t peer = 1 - group.rank();
  for (int32_t leg = 0; leg < 2; ++leg) {
    const bool sending = (leg == 0) == (group.rank() == 0);
    Expected<PendingTransfer> t = sending ? group.Send(buffer, peer, 7, what) : group.Recv(buffer, peer, 7, what);
    if (!t) return t.error();
    if (Status s = t->Wait(); !s) return s;
  }
  return Status::Ok();
}

}  // namespace

Expected<GroupCalibration> CalibrateProcessGroup(const DistributedConfig& config,
                                                 const GroupCalibrationOptions& options) {
  if (options.min_bytes < 4 || options.max_bytes < options.min_bytes || options.repeats < 1)
    return Error{"group calibration: sizes must satisfy 4 <= min_bytes <= max_bytes and repeats >= 1"};
  Expected<std::unique_ptr<ProcessGroup>> connected = ProcessGroup::Connect(config);
  if (!connected) return connected.error();
  ProcessGroup& group = **connected;
  const int32_t p = group.size();
  GroupCalibration result;
  result.processes = p;
  result.send.src = 0;
  result.send.dst = 1;
  for (int64_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4) {
    const int64_t n = std::max<int64_t>(p, bytes / 4 / p * p);  // floats, a multiple of p
    const int64_t step_bytes = n / p * 4;
    at::Tensor message = at::ones({n}, at::kFloat);
    Expected<double> send = TimeOp(group, options.repeats, [&] { return PingPong(group, message); },
                                   "the point-to-point calibration");
    if (!send) return send.error();
    result.send.points.push_back({n * 4, *send / 2.0});
    at::Tensor reduced = at::ones({n}, at::kFloat);
    Expected<double> all_reduce = TimeOp(
        group, options.repeats,
        [&] { return group.AllReduce(reduced, ProcessGroup::Reduce::kSum, "the all-reduce calibration"); },
        "the all-reduce calibration");
    if (!all_reduce) return all_reduce.error();
    result.all_reduce.points.push_back({step_bytes, *all_reduce / (2.0 * (p - 1))});
    at::Tensor part = at::ones({n / p}, at::kFloat);
    Expected<double> all_gather = TimeOp(
        group, options.repeats,
        [&]() -> Status {
          Expected<at::Tensor> out = group.AllGather(part, "the all-gather calibration");
          return out ? Status::Ok() : Status(out.error());
        },
        "the all-gather calibration");
    if (!all_gather) return all_gather.error();
    result.all_gather.points.push_back({step_bytes, *all_gather / (p - 1.0)});
  }
  FitLinkModel(&result.send);
  FitLinkModel(&result.all_reduce);
  FitLinkModel(&result.all_gather);
  return result;
}

Expected<Topology> ApplyGroupCalibration(const Topology& topology, const std::vector<int32_t>& rank_of_device,
                                         const GroupCalibration& calibration) {
  if (rank_of_device.size() != static_cast<size_t>(topology.num_devices()))
    return Error{"topology '" + topology.name() + "': the rank map has " + std::to_string(rank_of_device.size()) +
                 " entries for " + std::to_string(topology.num_devices()) + " devices"};
  std::vector<double> latency(topology.num_links(), 0.0), bandwidth(topology.num_links(), 0.0);
  std::vector<int32_t> uses(topology.num_links(), 0);
  for (DeviceId a = 0; a < topology.num_devices(); ++a)
    for (DeviceId b = 0; b < topology.num_devices(); ++b) {
      if (rank_of_device[a] == rank_of_device[b]) continue;
      const auto route = topology.route(a, b);
      const double hops = static_cast<double>(route.size());
      for (LinkId l : route) {
        latency[l] += calibration.all_reduce.latency / hops;
        bandwidth[l] += calibration.all_reduce.bandwidth * hops;
        ++uses[l];
      }
    }
  TopologyBuilder builder(topology.name());
  for (DeviceId d = 0; d < topology.num_devices(); ++d) builder.add_device(topology.device(d));
  for (const Switch& s : topology.switches()) builder.add_switch(s);
  for (LinkId l = 0; l < topology.num_links(); ++l) {
    Link link = topology.link(l);
    if (uses[l] > 0) {
      link.latency = latency[l] / uses[l];
      link.bandwidth = bandwidth[l] / uses[l];
    }
    builder.add_link(std::move(link));
  }
  return std::move(builder).Build();
}

}  // namespace devplace

#include "exec/process_calibration.h"
#include "core/quantile.h"
#include "exec/tensor_util.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

#include "distributed/process_group.h"
#include "exec/multiprocess.h"

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

// A chain of `length` element-wise ops over `floats` floats: an input, then relus each reading the previous op.
Graph ChainGraph(int64_t floats, int32_t length) {
  GraphBuilder b("message-chain");
  for (int32_t k = 0; k < length; ++k) {
    Op op;
    op.name = "op" + std::to_string(k);
    op.type = k == 0 ? "input" : "relu";
    op.shape = {floats};
    op.flops = static_cast<double>(floats);
    const OpId id = b.add_op(std::move(op));
    if (k > 0) b.add_edge(id - 1, id);
  }
  return std::move(b).Build().value();
}

// The executor's message cost between device `a` (rank 0) and `b` (rank 1) per size (see GroupCalibration::messages).
Status MeasureMessages(ProcessGroup& group, const Topology& topology, const std::vector<int32_t>& rank_of_device,
                       DeviceId a, DeviceId b, const GroupCalibrationOptions& options, PairCalibration* fit) {
  ExecOptions run;
  run.warmup_steps = 2;
  run.timed_steps = options.repeats;
  run.backend = "cpu";
  const int32_t length = options.chain + 1;
  for (int64_t bytes = options.min_bytes; bytes <= std::min(options.max_bytes, options.max_message_bytes);
       bytes *= 4) {
    const Graph graph = ChainGraph(std::max<int64_t>(1, bytes / 4), length);
    std::vector<DeviceId> alternating, once;
    for (int32_t k = 0; k < length; ++k) {
      alternating.push_back(k % 2 == 0 ? a : b);
      once.push_back(k < length / 2 ? a : b);
    }
    double step[2] = {0.0, 0.0};
    for (int i = 0; i < 2; ++i) {
      const Strategy strategy = Strategy::FromPlacement(i == 0 ? alternating : once);
      Expected<Executor> executor = Executor::CreateRank(graph, topology, strategy, run, group, rank_of_device);
      if (!executor) return executor.error();
      Expected<ExecResult> result = executor->Run();
      if (!result) return result.error();
      step[i] = result->median_step;
    }
    // A difference at or below zero is noise (a descheduled step), not a measurement: the size is left out.
    const double per_message = (step[0] - step[1]) / static_cast<double>(options.chain - 1);
    if (per_message > 0) fit->points.push_back({std::max<int64_t>(1, bytes / 4) * 4, per_message});
  }
  FitLinkModel(fit);
  // Refuse what no machine does (as a loaded machine's noise can make a fit do) rather than write it.
  if (fit->points.size() < 2 || !(fit->latency > 0 && fit->latency < 1.0) || !(fit->bandwidth > 1e6) ||
      !(fit->bandwidth < 1e13))
    return Error{group.Who() + ": the executor's messages between the processes did not give a physical fit (" +
                 std::to_string(fit->points.size()) + " sizes with a positive cost, " +
                 std::to_string(fit->latency * 1e6) + " us + bytes / " + std::to_string(fit->bandwidth / 1e9) +
                 " GB/s); is the machine loaded?"};
  return Status::Ok();
}

}  // namespace

Expected<GroupCalibration> CalibrateProcessGroup(const DistributedConfig& config,
                                                 const GroupCalibrationOptions& options, const Topology* topology) {
  if (options.min_bytes < 4 || options.max_bytes < options.min_bytes || options.repeats < 1 ||
      options.max_message_bytes < options.min_bytes || options.chain < 2)
    return Error{"group calibration: sizes must satisfy 4 <= min_bytes <= max_bytes, max_message_bytes, repeats >= 1 "
                 "and chain >= 2"};
  std::vector<int32_t> rank_of_device;
  DeviceId a = -1, b = -1;
  if (topology) {
    Expected<std::vector<int32_t>> ranks = RankOfDevices(*topology, Strategy{}, config.world_size);
    if (!ranks) return ranks.error();
    rank_of_device = std::move(*ranks);
    for (DeviceId d = topology->num_devices() - 1; d >= 0; --d) {
      if (rank_of_device[d] == 0) a = d;
      if (rank_of_device[d] == 1) b = d;
    }
    if (a < 0 || b < 0)
      return Error{"group calibration: topology '" + topology->name() + "' has no device of rank 0 or 1"};
  }
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
  result.messages.src = a;
  result.messages.dst = b;
  if (topology)
    if (Status s = MeasureMessages(group, *topology, rank_of_device, a, b, options, &result.messages); !s)
      return s.error();
  return result;
}

Expected<Topology> ApplyGroupCalibration(const Topology& topology, const std::vector<int32_t>& rank_of_device,
                                         const GroupCalibration& calibration) {
  if (rank_of_device.size() != static_cast<size_t>(topology.num_devices()))
    return Error{"topology '" + topology.name() + "': the rank map has " + std::to_string(rank_of_device.size()) +
                 " entries for " + std::to_string(topology.num_devices()) + " devices"};
  if (calibration.messages.points.empty())
    return Error{"topology '" + topology.name() + "': the group calibration did not measure the executor's messages"};
  const PairCalibration& m = calibration.messages;
  const PairCalibration& ar = calibration.all_reduce;
  const std::string where = "topology '" + topology.name() + "': the group calibration's ";
  if (Status s = CheckPhysicalFit(m, where + "messages"); !s) return s.error();
  if (Status s = CheckPhysicalFit(ar, where + "all-reduce steps"); !s) return s.error();
  const double wire = std::min(calibration.send.latency, m.latency);
  std::vector<double> latency(topology.num_links(), 0.0), message(topology.num_links(), 0.0),
      bandwidth(topology.num_links(), 0.0), step(topology.num_links(), 0.0), step_bandwidth(topology.num_links(), 0.0);
  std::vector<int32_t> uses(topology.num_links(), 0);
  for (DeviceId a = 0; a < topology.num_devices(); ++a)
    for (DeviceId b = 0; b < topology.num_devices(); ++b) {
      if (rank_of_device[a] == rank_of_device[b]) continue;
      const auto route = topology.route(a, b);
      const double hops = static_cast<double>(route.size());
      for (LinkId l : route) {
        latency[l] += wire / hops;
        message[l] += (m.latency - wire) / hops;
        bandwidth[l] += m.bandwidth * hops;
        step[l] += std::max(0.0, ar.latency - wire) / hops;
        step_bandwidth[l] += ar.bandwidth * hops;
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
      link.message_cost = message[l] / uses[l];
      link.bandwidth = bandwidth[l] / uses[l];
      link.step_cost = step[l] / uses[l];
      link.step_bandwidth = step_bandwidth[l] / uses[l];
    }
    builder.add_link(std::move(link));
  }
  return std::move(builder).Build();
}

}  // namespace devplace

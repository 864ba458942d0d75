#include "exec/profiler.h"

#include <algorithm>
#include <map>
#include <thread>
#include <tuple>

#include "core/quantile.h"
#include "exec/backend.h"
#include "exec/kernels.h"
#include "exec/torch_errors.h"
#include "exec/tensor_util.h"

namespace devplace {

namespace {

using Signature = std::tuple<std::string, OpRole, DType, std::vector<int64_t>, double>;

// One entry per signature of `graph` for device kind `kind`, appended to `out`; returns the entry of every op.
std::vector<size_t> IndexSignatures(const Graph& graph, const std::string& kind, std::vector<OpTiming>* out) {
  std::map<Signature, size_t> index;
  std::vector<size_t> entry_of_op;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const Op& o = graph.op(op);
    Signature key{o.type, o.role, o.dtype, o.shape, o.flops};
    auto [it, inserted] = index.emplace(key, out->size());
    if (inserted) {
      OpTiming p;
      p.device_kind = kind;
      p.op_type = o.type;
      p.role = o.role;
      p.dtype = o.dtype;
      p.shape = o.shape;
      p.flops = o.flops;
      p.example_op = o.name;
      p.min_seconds = 1e30;
      out->push_back(std::move(p));
    }
    ++(*out)[it->second].instances;
    entry_of_op.push_back(it->second);
  }
  return entry_of_op;
}

// In-graph: whole steps with every op on device `d`.
Status ProfileInGraph(const Graph& graph, const Topology& topology, DeviceId d, const ProfileOptions& options,
                      std::vector<OpTiming>* out) {
  ExecOptions exec;
  exec.warmup_steps = options.warmup_runs;
  exec.timed_steps = options.timed_runs;
  exec.backend = options.backend;
  exec.seed = options.seed;
  exec.pin_threads = options.pin_threads;
  Expected<ExecResult> run = ExecuteStrategy(graph, topology, Strategy::AllOn(graph.num_ops(), d), exec);
  if (!run.ok()) return run.error();
  std::vector<OpTiming> entries = InGraphProfile(graph, topology.device(d).kind, {*run});
  out->insert(out->end(), entries.begin(), entries.end());
  return Status::Ok();
}

// Isolated: each signature's kernel alone on `device`, on synthetic inputs. Runs on the calling thread.
Status ProfileIsolated(const Graph& graph, const std::string& kind, const at::Device& device,
                       const ProfileOptions& options, std::vector<OpTiming>* out) {
  const size_t first = out->size();
  const std::vector<size_t> entry_of_op = IndexSignatures(graph, kind, out);
  std::vector<OpId> representative(out->size() - first, -1);
  for (OpId op = 0; op < graph.num_ops(); ++op)
    if (representative[entry_of_op[op] - first] < 0) representative[entry_of_op[op] - first] = op;
  Expected<exec::Plan> plan = exec::BuildPlan(graph, std::vector<at::Device>(graph.num_ops(), device), options.seed);
  if (!plan.ok()) return plan.error();
  for (size_t i = 0; i < representative.size(); ++i) {
    const OpId op = representative[i];
    OpTiming& p = (*out)[first + i];
    exec::Kernel& kernel = *plan->kernels[op];
    p.stand_in = kernel.stand_in();
    exec::KernelIo io;
    io.inputs = exec::SyntheticInputs(graph, *plan, op, device, options.seed);
    std::vector<double> times;
    for (int32_t run = 0; run < options.warmup_runs + options.timed_runs; ++run) {
      io.outputs.assign(graph.out_edges(op).size(), at::Tensor());
      io.produced.clear();
      double seconds = 0.0;
      try {
        seconds = exec::TimeOnDevice(device, [&] { kernel.Run(io); });
      } catch (const std::exception& e) {
        return Error{"op '" + graph.op(op).name + "' (" + graph.op(op).type +
                     "): kernel failed: " + exec::DescribeTorchFailure(e, kind)};
      }
      if (run >= options.warmup_runs) times.push_back(seconds);
    }
    p.seconds = Median(times);
    p.min_seconds = *std::min_element(times.begin(), times.end());
    p.max_seconds = *std::max_element(times.begin(), times.end());
  }
  return Status::Ok();
}

}  // namespace

std::vector<OpTiming> InGraphProfile(const Graph& graph, const std::string& kind,
                                      const std::vector<ExecResult>& runs) {
  std::vector<OpTiming> entries;
  const std::vector<size_t> entry_of_op = IndexSignatures(graph, kind, &entries);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    OpTiming& p = entries[entry_of_op[op]];
    std::vector<double> samples;
    for (const ExecResult& run : runs) {
      samples.push_back(run.op_seconds.at(op) + run.op_handoff_seconds.at(op));
      p.stand_in = p.stand_in || run.op_stand_in.at(op);
    }
    const double seconds = Median(samples);
    p.seconds += seconds / p.instances;
    p.min_seconds = std::min(p.min_seconds, seconds);
    p.max_seconds = std::max(p.max_seconds, seconds);
  }
  for (OpTiming& p : entries) p.seconds = std::max(p.seconds, 1e-9);
  return entries;
}

Status ValidateProfileOptions(const ProfileOptions& options) {
  if (options.warmup_runs < 0) return Error{"profile options: warmup_runs must be >= 0"};
  if (options.timed_runs < 1) return Error{"profile options: timed_runs must be >= 1"};
  if (options.backend != "auto" && options.backend != "cpu" && options.backend != "cuda")
    return Error{"profile options: backend '" + options.backend + "' is not one of auto, cpu, cuda"};
  return Status::Ok();
}

Expected<ProfileResult> ProfileGraph(const Graph& graph, const Topology& topology, const ProfileOptions& options) {
  if (Status s = ValidateProfileOptions(options); !s.ok()) return s.error();
  Expected<BackendInfo> backend = ResolveBackend(options.backend, topology);
  if (!backend.ok()) return backend.error();
  exec::ConfigureTorch();
  ProfileResult result;
  result.backend = *backend;
  const double start = exec::NowSeconds();
  std::vector<std::string> kinds;
  for (DeviceId d = 0; d < topology.num_devices(); ++d) {
    const std::string& kind = topology.device(d).kind;
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) continue;
    kinds.push_back(kind);
    const at::Device device = exec::TorchDevice(*backend, d);
    const std::string timer = options.mode == ProfileMode::kIsolated ? exec::DeviceTimer(device) : "wall-clock";
    const std::string settings = exec::PrecisionSettings(device);
    result.kind_settings.push_back(kind + ": timer=" + timer + (settings.empty() ? "" : " " + settings));
    Status status;
    if (options.mode == ProfileMode::kInGraph) {
      status = ProfileInGraph(graph, topology, d, options, &result.entries);
    } else {
      const int core = exec::WorkerCore(*backend, d, options.pin_threads);
      // A thread set up like the executor's worker for device d, so the kernels run as they do in a step.
      std::thread worker([&] {
        exec::SetUpWorkerThread(device, core);
        try {
          status = ProfileIsolated(graph, kind, device, options, &result.entries);
        } catch (const std::exception& e) {  // c10::Error or std::bad_alloc
          status = Error{"graph '" + graph.name() + "': profiling failed: " +
                         exec::DescribeTorchFailure(e, topology.device(d).name)};
        }
      });
      worker.join();
    }
    if (!status.ok()) return status.error();
  }
  for (OpTiming& p : result.entries) p.seconds = std::max(p.seconds, 1e-9);
  for (const OpTiming& p : result.entries) result.stand_in_signatures += p.stand_in ? 1 : 0;
  result.seconds = exec::NowSeconds() - start;
  return result;
}

}  // namespace devplace

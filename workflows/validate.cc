#include "workflows/validate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>
#include <memory>
#include <optional>
#include <sstream>

#include "agents/search.h"
#include "core/atomic_file.h"
#include "core/format.h"
#include "core/mesh.h"
#include "core/sharding.h"
#include "core/sharding_io.h"
#include "core/topology_yaml.h"
#include "exec/calibration.h"
#include "exec/executor.h"
#include "exec/multiprocess.h"
#include "exec/pipeline.h"
#include "exec/profiler.h"
#include "sim/pipeline.h"
#include "sim/simulator.h"
#include "workflows/suite_inputs.h"
#include "workflows/validate_pipeline.h"

namespace devplace {

namespace {

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? one + " " + five + " " + fifteen : "unknown";
}

std::string OpsPerDevice(const Strategy& strategy, int32_t devices) {
  std::vector<int32_t> count(devices, 0);
  for (const OpConfig& c : strategy.configs)
    for (DeviceId d : c.devices) ++count[d];  // op parts per device
  std::string s;
  for (int32_t d = 0; d < devices; ++d) {
    if (d > 0) s += '/';
    s += std::to_string(count[d]);
  }
  return s;
}

// The suite's inputs, all loaded before anything is written.
struct ValidateInputs {
  Topology topology;
  std::optional<Topology> process_topology;  // the multi-process rows' machine (suite.process_topology)
  std::vector<Graph> graphs;
  std::vector<std::unique_ptr<SearchAlgorithm>> algorithms;
  std::unique_ptr<SearchAlgorithm> random;
  std::vector<ShardingRequest> shardings;  // parallel to suite.shardings
};

Expected<ValidateInputs> LoadInputs(const ValidateSuite& suite) {
  ValidateInputs in;
  Expected<Topology> t = ReadTopologyFile(suite.topology);
  if (!t) return t.error();
  in.topology = std::move(t).value();
  if (!suite.process_topology.empty()) {
    Expected<Topology> p = ReadTopologyFile(suite.process_topology);
    if (!p) return Error{suite.source + ": multi_process.topology: " + p.error().message};
    in.process_topology = std::move(p).value();
  }
  for (size_t i = 0; i < suite.algorithms.size(); ++i) {
    Expected<std::unique_ptr<SearchAlgorithm>> algo = MakeSearchAlgorithm(suite.algorithms[i]);
    if (!algo) return Error{suite.source + ": algorithms[" + std::to_string(i) + "]: " + algo.error().message};
    in.algorithms.push_back(std::move(algo).value());
  }
  if (!suite.shardings.empty()) {
    Expected<std::vector<Mesh>> meshes = ReadTopologyMeshes(suite.topology, in.topology);
    if (!meshes) return meshes.error();
    for (size_t i = 0; i < suite.shardings.size(); ++i) {
      Expected<ShardingRequest> r =
          ReadShardingRequestFile(suite.shardings[i].spec, in.topology, *meshes, suite.shardings[i].mesh);
      if (!r) return Error{suite.source + ": shardings[" + std::to_string(i) + "]: " + r.error().message};
      in.shardings.push_back(std::move(r).value());
    }
  }
  Expected<std::unique_ptr<SearchAlgorithm>> random = MakeSearchAlgorithm("random");
  if (!random) return random.error();
  in.random = std::move(random).value();
  Expected<std::vector<Graph>> graphs = BuildSuiteGraphs(suite.models, suite.source);
  if (!graphs) return graphs.error();
  in.graphs = std::move(graphs).value();
  return in;
}

struct NamedStrategy {
  std::string name;
  Strategy strategy;      // a pipeline's: its MicrobatchStrategy
  std::string error;      // why there is no strategy
  int32_t processes = 1;  // > 1: executed as that many ranks (ValidateRunOptions::run_processes)
  std::optional<PipelinePlan> pipeline;  // set: executed and simulated as this pipeline plan
};

// The strategies to validate for one model: the suite's algorithms, then its random placements, without repeats.
std::vector<NamedStrategy> Strategies(const ValidateSuite& suite, const ValidateInputs& in, const Graph& graph,
                                      const CostModel& cost) {
  std::vector<NamedStrategy> out;
  auto add = [&](const std::string& name, Expected<SearchResult> result) {
    NamedStrategy s{name, Strategy{}, result.ok() ? "" : result.error().message};
    if (result.ok()) s.strategy = std::move(result->strategy);
    for (const NamedStrategy& prior : out)
      if (s.error.empty() && prior.error.empty() && prior.strategy == s.strategy) return;  // a repeat
    out.push_back(std::move(s));
  };
  SearchProblem problem{&graph, &in.topology, cost, SimOptions{}};
  for (const auto& algo : in.algorithms) {
    SearchRequest request;
    request.budget = SearchBudget{suite.budget_evaluations, suite.budget_seconds};
    request.seed = suite.seed;
    add(algo->name(), algo->Search(problem, request));
  }
  for (int32_t i = 0; i < suite.random_placements; ++i) {
    SearchRequest request;
    request.seed = suite.seed + static_cast<uint64_t>(i);
    add("random-" + std::to_string(i), in.random->Search(problem, request));
  }
  for (size_t i = 0; i < in.shardings.size(); ++i) {
    // `devplace shard`: propagate the spec's annotations over the model and lower the specs to per-op configs.
    const ShardingRequest& r = in.shardings[i];
    const std::string stem = std::filesystem::path(suite.shardings[i].spec).stem().string();
    Expected<SearchResult> result = [&]() -> Expected<SearchResult> {
      Expected<ShardingPlan> plan = PropagateSharding(graph, r.mesh, r.annotations);
      if (!plan) return plan.error();
      Expected<Strategy> strategy = LowerSpecs(graph, plan->specs, r.mesh);
      if (!strategy) return strategy.error();
      return SearchResult{std::move(strategy).value()};
    }();
    add("shard-" + stem, std::move(result));
  }
  for (const SuitePipeline& p : suite.pipelines) {
    PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
    ParsePipelineSchedule(p.schedule, &schedule);  // checked by the suite reader
    NamedStrategy s{"pipeline-" + std::to_string(p.stages) + "s-m" + std::to_string(p.microbatches) + "-" + p.schedule,
                    Strategy{}, ""};
    Expected<PipelinePlan> plan = EvenPipeline(graph, in.topology, p.stages, p.microbatches, schedule);
    Expected<Strategy> strategy =
        plan ? MicrobatchStrategy(graph, in.topology, *plan) : Expected<Strategy>(plan.error());
    if (strategy) {
      s.strategy = std::move(strategy).value();
      s.pipeline = std::move(plan).value();
    } else {
      s.error = strategy.error().message;
    }
    out.push_back(std::move(s));
  }
  // Multi-process twins of the strategies whose ops span devices (one process per device), plain or split.
  auto spans_devices = [](const Strategy& strategy) {
    for (const OpConfig& c : strategy.configs)
      for (DeviceId d : c.devices)
        if (d != strategy.configs[0].devices[0]) return true;
    return false;
  };
  const size_t single = out.size();
  for (size_t i = 0; i < single && suite.processes > 1; ++i)
    if (out[i].error.empty() && !out[i].pipeline && spans_devices(out[i].strategy) &&
        RankOfDevices(in.topology, out[i].strategy, suite.processes).ok()) {
      NamedStrategy multi = out[i];
      multi.name += " x" + std::to_string(suite.processes) + "p";
      multi.processes = suite.processes;
      out.push_back(std::move(multi));
    }
  return out;
}

// Calibrates `topology` in place when the suite asks for it (writing the calibrated machine to the output folder)
// and returns the summary's description of the machine.
Expected<std::string> PrepareMachine(const ValidateSuite& suite, const ValidateRunOptions& options,
                                     Topology* topology) {
  std::ostringstream machine;
  if (!suite.calibrate) {
    machine << "Machine: `" << suite.topology << "` as given (not calibrated).\n";
    return machine.str();
  }
  if (options.progress) options.progress("calibrating " + topology->name() + " ...");
  Expected<CalibrationResult> c = Calibrate(*topology);
  if (!c) return c.error();
  Expected<Topology> calibrated = ApplyCalibration(*topology, *c);
  if (!calibrated) return calibrated.error();
  *topology = std::move(calibrated).value();
  if (Status s = WriteFileAtomic(options.output_dir + "/topology-calibrated.yaml", TopologyToYaml(*topology)); !s)
    return s.error();
  machine << "Machine: `" << suite.topology << "`, calibrated (" << c->backend.name << " backend, "
          << c->backend.cpu_cores << " cores visible):\n";
  for (const PairCalibration& p : c->pairs)
    machine << "- " << topology->device(p.src).name << " -> " << topology->device(p.dst).name << ": latency "
            << FormatSeconds(p.latency) << ", bandwidth " << FormatBytes(p.bandwidth) << "/s\n";
  for (const PairCalibration& p : c->steps)
    machine << "- " << topology->device(p.src).name << " -> " << topology->device(p.dst).name
            << ", a collective step (copy and add): " << FormatSeconds(p.latency) << " + bytes / "
            << FormatBytes(p.bandwidth) << "/s\n";
  for (DeviceId d = 0; d < topology->num_devices(); ++d)
    machine << "- " << topology->device(d).name << ": " << FormatCount(c->peak_flops[d]) << "FLOP/s peak (matmul), "
            << FormatBytes(c->memory_bandwidth[d]) << "/s copy bandwidth\n";
  return machine.str();
}

// The first device of each kind: in-graph profiling runs every op on it.
std::vector<DeviceId> FirstDeviceOfEachKind(const Topology& topology) {
  std::vector<std::string> kinds;
  std::vector<DeviceId> devices;
  for (DeviceId d = 0; d < topology.num_devices(); ++d) {
    if (std::find(kinds.begin(), kinds.end(), topology.device(d).kind) != kinds.end()) continue;
    kinds.push_back(topology.device(d).kind);
    devices.push_back(d);
  }
  return devices;
}

// Executes one model's strategies for the suite's rounds, every strategy in turn in each round (so that a change
// in the machine's load affects them all alike), and, for in-graph profiling, the single-device profile runs
// beside them so the simulation's op costs are measured under the same conditions. Fills the rows' execution
// fields and errors; returns each strategy's step times and the cost table measured alongside.
Expected<CostTable> ExecuteRounds(const ValidateSuite& suite, const Graph& graph, const Topology& topology,
                                  const std::vector<NamedStrategy>& strategies, const ProfileResult& profile,
                                  const ValidateRunOptions& run_options, ValidateRow* rows,
                                  std::vector<std::vector<double>>* steps) {
  ExecOptions options;
  options.warmup_steps = suite.warmup_steps;
  options.timed_steps = suite.timed_steps;
  options.seed = suite.seed;
  ExecOptions profile_exec = options;
  profile_exec.warmup_steps = suite.profile_warmup_runs;
  profile_exec.timed_steps = suite.profile_timed_runs;
  const std::vector<DeviceId> profile_devices =
      suite.profile_isolated ? std::vector<DeviceId>{} : FirstDeviceOfEachKind(topology);
  std::vector<std::vector<ExecResult>> profile_runs(profile_devices.size());
  steps->assign(strategies.size(), {});
  // An executor lives for one run, so that one strategy's threads and memory are gone before the next starts.
  for (int32_t round = 0; round < suite.rounds; ++round) {
    for (size_t k = 0; k < profile_devices.size(); ++k) {
      Expected<ExecResult> run =
          ExecuteStrategy(graph, topology, Strategy::AllOn(graph.num_ops(), profile_devices[k]), profile_exec);
      if (!run) return run.error();
      profile_runs[k].push_back(std::move(run).value());
    }
    for (size_t i = 0; i < strategies.size(); ++i) {
      ValidateRow& row = rows[i];
      if (!row.error.empty()) continue;
      const NamedStrategy& s = strategies[i];
      Expected<ExecResult> run =
          s.pipeline               ? ExecutePipeline(graph, topology, *s.pipeline, options)
          : s.processes == 1       ? ExecuteStrategy(graph, topology, s.strategy, options)
          : run_options.run_processes ? run_options.run_processes(graph, topology, s.strategy, options, s.processes)
                                      : Expected<ExecResult>(Error{"multi-process rows need a launcher (devplace "
                                                                   "validate gives one)"});
      if (!run.ok()) {
        row.error = run.error().message;
        continue;
      }
      (*steps)[i].insert((*steps)[i].end(), run->step_seconds.begin(), run->step_seconds.end());
      row.copies = run->num_copies;
      row.bytes_copied = run->bytes_copied;
      row.stand_in_ops = run->stand_in_ops;
    }
  }
  CostTable table{.entries = profile.entries};
  if (!suite.profile_isolated) {
    table.entries.clear();
    for (size_t k = 0; k < profile_devices.size(); ++k) {
      std::vector<OpTiming> entries =
          InGraphProfile(graph, topology.device(profile_devices[k]).kind, profile_runs[k]);
      table.entries.insert(table.entries.end(), entries.begin(), entries.end());
    }
  }
  return table;
}

// The profiled costs of the op parts of the partitioned strategies that ran (ProfileParts, in the suite's profile
// mode), added to `table` where it has no entry of their signature yet.
Status AddPartProfiles(const ValidateSuite& suite, const Graph& graph, const Topology& topology,
                       const std::vector<NamedStrategy>& strategies, const ValidateRow* rows, CostTable* table,
                       const ValidateRunOptions& options) {
  ProfileOptions profile;
  profile.mode = suite.profile_isolated ? ProfileMode::kIsolated : ProfileMode::kInGraph;
  profile.warmup_runs = suite.profile_warmup_runs;
  profile.timed_runs = suite.profile_timed_runs;
  profile.seed = suite.seed;
  std::set<std::tuple<std::string, std::string, OpRole, std::vector<int64_t>, double>> known;
  for (const OpTiming& e : table->entries) known.emplace(e.device_kind, e.op_type, e.role, e.shape, e.flops);
  for (size_t i = 0; i < strategies.size(); ++i) {
    if (!rows[i].error.empty() || strategies[i].strategy.is_plain_placement()) continue;
    if (options.progress) options.progress("  profiling the op parts of " + strategies[i].name + " ...");
    Expected<std::vector<OpTiming>> parts =
        strategies[i].pipeline ? ProfilePipelineParts(graph, topology, *strategies[i].pipeline, profile)
                               : ProfileParts(graph, topology, strategies[i].strategy, profile);
    if (!parts) return parts.error();
    for (OpTiming& e : *parts)
      if (known.emplace(e.device_kind, e.op_type, e.role, e.shape, e.flops).second)
        table->entries.push_back(std::move(e));
  }
  return Status::Ok();
}

// Simulates the rows that ran with the measured costs and fills in simulated and measured (median) times.
void SimulateRows(const Graph& graph, const Topology& topology, const Topology& process_topology,
                  const std::vector<NamedStrategy>& strategies, const CostModel& cost,
                  std::vector<std::vector<double>>& steps, ValidateRow* rows, const ValidateRunOptions& options) {
  for (size_t i = 0; i < strategies.size(); ++i) {
    ValidateRow& row = rows[i];
    if (!row.error.empty() || steps[i].empty()) continue;
    const Topology& machine = strategies[i].processes > 1 ? process_topology : topology;
    Expected<SimResult> sim = [&]() -> Expected<SimResult> {
      if (!strategies[i].pipeline) return Simulate(graph, machine, strategies[i].strategy, cost);
      Expected<PipelineResult> piped = SimulatePipeline(graph, machine, *strategies[i].pipeline, cost);
      if (!piped) return piped.error();
      return std::move(piped->sim);
    }();
    if (!sim.ok()) {
      row.error = sim.error().message;
      continue;
    }
    row.simulated = sim->step_time;
    std::sort(steps[i].begin(), steps[i].end());
    const size_t m = steps[i].size() / 2;
    row.ok = true;
    row.measured = steps[i].size() % 2 ? steps[i][m] : 0.5 * (steps[i][m - 1] + steps[i][m]);
    row.measured_min = steps[i].front();
    row.measured_max = steps[i].back();
    if (options.progress) {
      char line[256];
      std::snprintf(line, sizeof line, "  %-14s measured %8.2f ms  simulated %8.2f ms  (%+.1f%%)",
                    row.strategy.c_str(), row.measured * 1e3, row.simulated * 1e3,
                    100 * (row.simulated - row.measured) / row.measured);
      options.progress(line);
    }
  }
  for (size_t i = 0; i < strategies.size(); ++i)
    if (options.progress && !rows[i].error.empty())
      options.progress("  " + rows[i].strategy + " failed: " + rows[i].error);
}

// Profiles, places, executes and simulates one model, appending its rows.
Status ValidateModel(const ValidateSuite& suite, const ValidateInputs& in, const Topology& topology,
                     const Graph& graph, const std::string& label, const ValidateRunOptions& options,
                     std::vector<ValidateRow>* rows) {
  if (options.progress) options.progress(label + ": profiling " + std::to_string(graph.num_ops()) + " ops ...");
  ProfileOptions profile_options;
  profile_options.mode = suite.profile_isolated ? ProfileMode::kIsolated : ProfileMode::kInGraph;
  profile_options.warmup_runs = suite.profile_warmup_runs;
  profile_options.timed_runs = suite.profile_timed_runs;
  profile_options.seed = suite.seed;
  Expected<ProfileResult> profile = ProfileGraph(graph, topology, profile_options);
  if (!profile) return profile.error();
  const CostModel search_cost = MakeProfiledCostModel(CostTable{.entries = profile->entries});
  const std::vector<NamedStrategy> strategies = Strategies(suite, in, graph, search_cost);
  const size_t first = rows->size();
  for (const NamedStrategy& s : strategies) {
    ValidateRow row{label, s.name};
    row.kind = s.pipeline ? "pipeline" : s.strategy.is_plain_placement() ? "placement" : "split";
    if (s.processes > 1) row.kind += " x" + std::to_string(s.processes) + "p";
    row.error = s.error;
    if (row.error.empty()) row.device_ops = OpsPerDevice(s.strategy, topology.num_devices());
    rows->push_back(std::move(row));
  }
  std::vector<std::vector<double>> steps;
  Expected<CostTable> table =
      ExecuteRounds(suite, graph, topology, strategies, *profile, options, rows->data() + first, &steps);
  if (!table) return table.error();
  if (Status s = AddPartProfiles(suite, graph, topology, strategies, rows->data() + first, &*table, options); !s)
    return s;
  if (Status s = WriteCostTableFile(*table, options.output_dir + "/costs-" + label + ".json"); !s) return s;
  SimulateRows(graph, topology, in.process_topology ? *in.process_topology : topology, strategies,
               MakeProfiledCostModel(*table), steps, rows->data() + first, options);
  return Status::Ok();
}

}  // namespace

Expected<ValidateRun> RunValidateSuite(const ValidateSuite& suite, const ValidateRunOptions& options) {
  Expected<ValidateInputs> in = LoadInputs(suite);
  if (!in) return in.error();
  if (Status s = CreateOutputDir(options.output_dir); !s) return s.error();
  const std::string load_before = LoadAverage();
  Topology topology = in->topology;
  Expected<std::string> machine = PrepareMachine(suite, options, &topology);
  if (!machine) return machine.error();
  if (suite.processes > 1 && suite.calibrate && !in->process_topology && options.calibrate_processes) {
    const std::string out = options.output_dir + "/topology-calibrated-" + std::to_string(suite.processes) + "p.yaml";
    if (options.progress) options.progress("calibrating " + std::to_string(suite.processes) + " processes ...");
    Expected<Topology> calibrated = options.calibrate_processes(suite.topology, suite.processes, out);
    if (!calibrated) return calibrated.error();
    in->process_topology = std::move(calibrated).value();
    *machine += "\nMulti-process rows: simulated on `" + out + "` (devplace calibrate --processes " +
                std::to_string(suite.processes) + ": links between the processes' devices from the executor's "
                "messages between them, their collective steps from the process group's all-reduce; the fits are "
                "in the file's first lines).\n";
  }

  ValidateRun run;
  for (size_t m = 0; m < in->graphs.size(); ++m) {
    run.models.push_back(suite.models[m].label());
    if (Status s = ValidateModel(suite, *in, topology, in->graphs[m], run.models.back(), options, &run.rows); !s)
      return s.error();
  }
  for (const ValidateRow& r : run.rows) run.failed += !r.ok;
  *machine += "\nHost load average (1, 5, 15 min) before: " + load_before + "; after: " + LoadAverage() + ".\n";
  if (Status s = WriteValidateCsv(run.rows, options.output_dir + "/results.csv"); !s) return s.error();
  if (Status s = WriteValidateSummary(run.rows, run.models, suite.name, options.command, *machine,
                                      options.output_dir + "/summary.md");
      !s)
    return s.error();
  run.scatter = WriteValidateScatter(run.rows, run.models, options.output_dir);
  return run;
}

}  // namespace devplace

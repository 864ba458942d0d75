// `devplace validate --suite V.yaml -o DIR [--json]`: for every model of a validation suite, profiles its ops,
// places it with the suite's algorithms and random placements, simulates each strategy with the profiled costs on
// the (calibrated) machine, executes it for real (the strategies of a model in turn, for the suite's rounds), and
// writes DIR/results.csv, DIR/summary.md (MAPE, max error, Kendall tau) and DIR/scatter.png, plus the calibrated
// topology and the cost tables it used.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "agents/search.h"
#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "apps/model_source.h"
#include "apps/profile_table.h"
#include "apps/validate_report.h"
#include "core/atomic_file.h"
#include "core/topology_yaml.h"
#include "core/validate_suite.h"
#include "exec/calibration.h"
#include "exec/executor.h"
#include "exec/profiler.h"
#include "sim/simulator.h"

namespace devplace::cli {

namespace {

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? one + " " + five + " " + fifteen : "unknown";
}

std::string OpsPerDevice(const Strategy& strategy, int32_t devices) {
  std::vector<int32_t> count(devices, 0);
  for (const OpConfig& c : strategy.configs) ++count[c.devices[0]];
  std::string s;
  for (int32_t d = 0; d < devices; ++d) s += (d ? "/" : "") + std::to_string(count[d]);
  return s;
}

struct NamedStrategy {
  std::string name;
  Strategy strategy;
  std::string error;  // why there is no strategy
};

// The strategies to validate for one model: the suite's algorithms, then its random placements, without repeats.
std::vector<NamedStrategy> Strategies(const ValidateSuite& suite, const Graph& graph, const Topology& topology,
                                      const CostModel& cost) {
  std::vector<NamedStrategy> out;
  auto add = [&](NamedStrategy s) {
    if (s.error.empty() && !s.strategy.is_plain_placement())
      s.error = "the strategy partitions ops; the executor runs plain placements only";
    for (const NamedStrategy& prior : out)
      if (s.error.empty() && prior.error.empty() && prior.strategy == s.strategy) return;  // a repeat
    out.push_back(std::move(s));
  };
  SearchProblem problem{&graph, &topology, cost, SimOptions{}};
  for (const std::string& name : suite.algorithms) {
    std::unique_ptr<SearchAlgorithm> algo = Unwrap(MakeSearchAlgorithm(name));
    SearchRequest request;
    request.budget = SearchBudget{suite.budget_evaluations, suite.budget_seconds};
    request.seed = suite.seed;
    Expected<SearchResult> result = algo->Search(problem, request);
    if (result.ok()) add({name, std::move(result->strategy), ""});
    else add({name, Strategy{}, result.error().message});
  }
  std::unique_ptr<SearchAlgorithm> random = Unwrap(MakeSearchAlgorithm("random"));
  for (int32_t i = 0; i < suite.random_placements; ++i) {
    SearchRequest request;
    request.seed = suite.seed + static_cast<uint64_t>(i);
    Expected<SearchResult> result = random->Search(problem, request);
    const std::string name = "random-" + std::to_string(i);
    if (result.ok()) add({name, std::move(result->strategy), ""});
    else add({name, Strategy{}, result.error().message});
  }
  return out;
}

}  // namespace

void RegisterValidateCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string suite, output;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("validate", "Compare simulated with measured step times over a suite");
  cmd->add_option("--suite", opts->suite, "Validation suite YAML file (see configs/suites/validate-cpu.yaml)")
      ->required();
  cmd->add_option("-o,--output", opts->output, "Output directory (results.csv, summary.md, scatter.png)")
      ->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    const ValidateSuite suite = Unwrap(ReadValidateSuite(opts->suite));
    Topology topology = LoadTopology(suite.topology);
    std::error_code ec;
    std::filesystem::create_directories(opts->output, ec);
    if (ec) throw CliError(opts->output + ": cannot create directory: " + ec.message());
    const bool progress = !opts->json && StderrIsTerminal();
    const std::string load_before = LoadAverage();
    std::ostringstream machine;
    if (suite.calibrate) {
      if (progress) std::fprintf(stderr, "calibrating %s ...\n", topology.name().c_str());
      const CalibrationResult c = Unwrap(Calibrate(topology));
      topology = Unwrap(ApplyCalibration(topology, c));
      Check(WriteFileAtomic(opts->output + "/topology-calibrated.yaml", TopologyToYaml(topology)));
      machine << "Machine: `" << suite.topology << "`, calibrated (" << c.backend.name << " backend, "
              << c.backend.cpu_cores << " cores visible):\n";
      for (const PairCalibration& p : c.pairs)
        machine << "- " << topology.device(p.src).name << " -> " << topology.device(p.dst).name << ": latency "
                << FormatSeconds(p.latency) << ", bandwidth " << FormatBytes(p.bandwidth) << "/s\n";
      for (DeviceId d = 0; d < topology.num_devices(); ++d)
        machine << "- " << topology.device(d).name << ": " << FormatCount(c.peak_flops[d]) << "FLOP/s peak (matmul), "
                << FormatBytes(c.memory_bandwidth[d]) << "/s copy bandwidth\n";
    } else {
      machine << "Machine: `" << suite.topology << "` as given (not calibrated).\n";
    }

    std::vector<ValidateRow> rows;
    std::vector<std::string> models;
    for (const SuiteModel& model : suite.models) {
      const Graph graph = LoadSuiteModel(model);
      const std::string label = model.label();
      models.push_back(label);
      if (progress) std::fprintf(stderr, "%s: profiling %d ops ...\n", label.c_str(), graph.num_ops());
      ProfileOptions profile_options;
      profile_options.mode = suite.profile_isolated ? ProfileMode::kIsolated : ProfileMode::kInGraph;
      profile_options.warmup_runs = suite.profile_warmup_runs;
      profile_options.timed_runs = suite.profile_timed_runs;
      profile_options.seed = suite.seed;
      const ProfileResult profile = Unwrap(ProfileGraph(graph, topology, profile_options));
      const CostModel search_cost = MakeProfiledCostModel(ProfileToCostTable(profile));
      std::vector<NamedStrategy> strategies = Strategies(suite, graph, topology, search_cost);
      const size_t first_row = rows.size();
      ExecOptions options;
      options.warmup_steps = suite.warmup_steps;
      options.timed_steps = suite.timed_steps;
      options.seed = suite.seed;
      for (size_t i = 0; i < strategies.size(); ++i) {
        ValidateRow row{label, strategies[i].name};
        row.error = strategies[i].error;
        if (row.error.empty()) row.device_ops = OpsPerDevice(strategies[i].strategy, topology.num_devices());
        rows.push_back(std::move(row));
      }
      // In-graph profiling runs every op on the first device of each kind; repeating it in every round, next to the
      // strategies, gives the simulation op costs measured under the same conditions as the executions.
      std::vector<std::string> kinds;
      std::vector<DeviceId> profile_devices;
      std::vector<std::vector<ExecResult>> profile_runs;
      ExecOptions profile_exec = options;
      profile_exec.warmup_steps = suite.profile_warmup_runs;
      profile_exec.timed_steps = suite.profile_timed_runs;
      if (!suite.profile_isolated) {
        for (DeviceId d = 0; d < topology.num_devices(); ++d) {
          if (std::find(kinds.begin(), kinds.end(), topology.device(d).kind) != kinds.end()) continue;
          kinds.push_back(topology.device(d).kind);
          profile_devices.push_back(d);
        }
        profile_runs.resize(kinds.size());
      }
      // Every round runs each strategy in turn, so that a change in the machine's load affects them all alike.
      std::vector<std::vector<double>> steps(strategies.size());
      // An executor lives for one run, so that one strategy's threads and memory are gone before the next starts.
      for (int32_t round = 0; round < suite.rounds; ++round) {
        for (size_t k = 0; k < profile_devices.size(); ++k)
          profile_runs[k].push_back(Unwrap(ExecuteStrategy(
              graph, topology, Strategy::AllOn(graph.num_ops(), profile_devices[k]), profile_exec)));
        for (size_t i = 0; i < strategies.size(); ++i) {
          ValidateRow& row = rows[first_row + i];
          if (!row.error.empty()) continue;
          Expected<ExecResult> run = ExecuteStrategy(graph, topology, strategies[i].strategy, options);
          if (!run.ok()) {
            row.error = run.error().message;
            continue;
          }
          steps[i].insert(steps[i].end(), run->step_seconds.begin(), run->step_seconds.end());
          row.copies = run->num_copies;
          row.bytes_copied = run->bytes_copied;
          row.stand_in_ops = run->stand_in_ops;
        }
      }
      CostTable table = ProfileToCostTable(profile);
      if (!suite.profile_isolated) {
        ProfileResult measured;
        for (size_t k = 0; k < kinds.size(); ++k) {
          std::vector<OpProfile> entries = InGraphProfile(graph, kinds[k], profile_runs[k]);
          measured.entries.insert(measured.entries.end(), entries.begin(), entries.end());
        }
        table = ProfileToCostTable(measured);
      }
      Check(WriteCostTableFile(table, opts->output + "/costs-" + label + ".json"));
      const CostModel cost = MakeProfiledCostModel(table);
      for (size_t i = 0; i < strategies.size(); ++i) {
        ValidateRow& row = rows[first_row + i];
        if (!row.error.empty() || steps[i].empty()) continue;
        Expected<SimResult> sim = Simulate(graph, topology, strategies[i].strategy, cost);
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
        if (progress)
          std::fprintf(stderr, "  %-14s measured %8.2f ms  simulated %8.2f ms  (%+.1f%%)\n", row.strategy.c_str(),
                       row.measured * 1e3, row.simulated * 1e3, 100 * (row.simulated - row.measured) / row.measured);
      }
      for (size_t i = 0; i < strategies.size(); ++i) {
        const ValidateRow& row = rows[first_row + i];
        if (progress && !row.error.empty())
          std::fprintf(stderr, "  %-14s failed: %s\n", row.strategy.c_str(), row.error.c_str());
      }
    }
    machine << "\nHost load average (1, 5, 15 min) before: " << load_before << "; after: " << LoadAverage() << ".\n";
    const std::string command = "devplace validate --suite " + opts->suite + " -o " + opts->output;
    Check(WriteValidateCsv(rows, opts->output + "/results.csv"));
    Check(WriteValidateSummary(rows, models, suite.name, command, machine.str(), opts->output + "/summary.md"));
    const Status scatter = WriteValidateScatter(rows, models, opts->output);
    if (!scatter.ok()) std::cerr << "devplace: warning: " << scatter.error().message << "\n";
    const ValidateStats all = ComputeValidateStats(rows);
    int32_t failed = 0;
    for (const ValidateRow& r : rows) failed += !r.ok;
    if (opts->json) {
      nlohmann::json per_model = nlohmann::json::array();
      for (const std::string& m : models) {
        const ValidateStats s = ComputeValidateStats(rows, m);
        per_model.push_back({{"model", m}, {"strategies", s.rows}, {"mape", s.mape}, {"max_error", s.max_error},
                             {"kendall_tau", s.kendall_tau}});
      }
      PrintJson({{"suite", suite.name}, {"output", opts->output}, {"strategies", all.rows}, {"failed", failed},
                 {"mape", all.mape}, {"max_error", all.max_error}, {"mean_error", all.mean_error},
                 {"kendall_tau", all.kendall_tau}, {"per_model", per_model}, {"scatter", scatter.ok()}});
    } else {
      std::cout << all.rows << " strategies over " << models.size() << " models: MAPE "
                << static_cast<double>(static_cast<int>(all.mape * 1000 + 0.5)) / 10 << "%, max error "
                << static_cast<double>(static_cast<int>(all.max_error * 1000 + 0.5)) / 10 << "%, Kendall tau "
                << static_cast<double>(static_cast<int>(all.kendall_tau * 1000 + 0.5)) / 1000
                << (failed ? ", " + std::to_string(failed) + " failed" : "") << "\nwrote " << opts->output
                << "/summary.md, results.csv" << (scatter.ok() ? ", scatter.png" : "") << "\n";
    }
    ctx.exit_code = failed ? 1 : 0;
  });
}

}  // namespace devplace::cli

// `devplace validate --suite V.yaml -o DIR [--json]`: simulated against measured step times over a validation suite
// (workflows/validate.h): DIR/results.csv, DIR/summary.md (MAPE, max error, Kendall tau) and DIR/scatter.png, plus
// the calibrated topology and the cost tables it used.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "apps/launcher.h"
#include "config/validate_suite.h"
#include "core/topology_yaml.h"
#include "workflows/validate.h"

namespace devplace::cli {

namespace {

// A fraction as a percentage with one decimal, e.g. 0.1234 -> "12.3".
std::string Percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", fraction * 100);
  return buffer;
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
    ValidateRunOptions options{opts->output, "devplace validate --suite " + opts->suite + " -o " + opts->output, {}};
    if (!opts->json && StderrIsTerminal())
      options.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    // Multi-process rows: this program's `run` as ranks on this machine, its files in a scratch folder.
    const std::string scratch = opts->output + "/.multi-process";
    options.run_processes = [scratch](const Graph& graph, const Topology& topology, const Strategy& strategy,
                                      const ExecOptions& exec, int32_t processes) -> Expected<ExecResult> {
      std::error_code ec;
      std::filesystem::create_directories(scratch, ec);
      if (ec) return Error{scratch + ": cannot create: " + ec.message()};
      return ExecuteInLocalProcesses(graph, topology, strategy, exec, processes, scratch, 60.0);
    };
    options.calibrate_processes = [](const std::string& topology, int32_t processes,
                                     const std::string& output) -> Expected<Topology> {
      if (LaunchLocalRanks(processes, {"calibrate", "-t", topology, "-o", output}, 65.0, "/dev/null") != 0)
        return Error{"calibrating " + std::to_string(processes) + " processes failed (see the ranks' errors above)"};
      return ReadTopologyFile(output);
    };
    const ValidateRun run = Unwrap(RunValidateSuite(suite, options));
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
    if (!run.scatter.ok()) std::cerr << "devplace: warning: " << run.scatter.error().message << "\n";
    const ValidateStats all = ComputeValidateStats(run.rows);
    if (opts->json) {
      nlohmann::json per_model = nlohmann::json::array();
      for (const std::string& m : run.models) {
        const ValidateStats s = ComputeValidateStats(run.rows, m);
        per_model.push_back({{"model", m}, {"strategies", s.rows}, {"mape", s.mape}, {"max_error", s.max_error},
                             {"kendall_tau", s.kendall_tau}});
      }
      PrintJson({{"suite", suite.name}, {"output", opts->output}, {"strategies", all.rows}, {"failed", run.failed},
                 {"mape", all.mape}, {"max_error", all.max_error}, {"mean_error", all.mean_error},
                 {"kendall_tau", all.kendall_tau}, {"per_model", per_model}, {"scatter", run.scatter.ok()}});
    } else {
      char tau[32];
      std::snprintf(tau, sizeof tau, "%.3f", all.kendall_tau);
      std::cout << all.rows << " strategies over " << run.models.size() << " models: MAPE " << Percent(all.mape)
                << "%, max error " << Percent(all.max_error) << "%, Kendall tau " << tau
                << (run.failed ? ", " + std::to_string(run.failed) + " failed" : "") << "\nwrote " << opts->output
                << "/summary.md, results.csv" << (run.scatter.ok() ? ", scatter.png" : "") << "\n";
    }
    ctx.exit_code = run.failed ? 1 : 0;
  });
}

}  // namespace devplace::cli

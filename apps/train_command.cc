// `devplace train --config E.yaml -o RUN [--resume | --overwrite] [--iterations N] [--dist-timeout S] [--json]`:
// trains a placement policy with PPO (agents/learned/learning.h), showing progress on a terminal, logging RUN/log.csv each
// iteration, checkpointing to RUN/ckpt and drawing RUN/curve.png with gnuplot at the end. With torchrun's or
// mpirun's environment variables set (distributed/config.h) the process is one rank of a data-parallel
// group; only rank 0 writes RUN and reports (scripts/launch-train.sh starts a group on one machine). A fresh run
// never replaces a previous one in RUN without --overwrite (rank 0 checks), and --resume with a --config other
// than the run's own is refused.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "agents/learned/learning.h"
#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "config/checkpoint_meta.h"
#include "config/experiment_config.h"
#include "core/atomic_file.h"

namespace devplace::cli {

namespace {

// Writes RUN/curve.gp and runs gnuplot on it; returns false when gnuplot is missing or fails.
bool DrawCurve(const std::string& run_dir) {
  namespace fs = std::filesystem;
  const std::string script = (fs::path(run_dir) / "curve.gp").string();
  const std::string log = (fs::path(run_dir) / "log.csv").string();
  const std::string png = (fs::path(run_dir) / "curve.png").string();
  const std::string text =
      "set terminal pngcairo size 900,500\nset output '" + png + "'\nset datafile separator ','\n"
      "set key autotitle columnhead top right\nset xlabel 'iteration'\n"
      "set ylabel 'step time / best single device (lower is better)'\nset grid\n"
      "plot '" + log + "' using 1:3 with lines title 'sampled (geo. mean)', "
      "'' using 1:4 with lines title 'best so far (train)', "
      "'' using 1:($12 > 0 ? $12 : 1/0) with linespoints title 'held-out zero-shot'\n";
  if (!WriteFileAtomic(script, text).ok()) return false;
  const std::string command = "gnuplot '" + script + "' 2>/dev/null";
  return std::system(command.c_str()) == 0;
}

// The files a run writes into its directory (a previous run is recognised, and --overwrite removes, these only).
const char* const kRunFiles[] = {"ckpt", "log.csv", "config.yaml", "curve.gp", "curve.png"};

// Refuses to start a fresh run over a previous one unless `overwrite`, in which case the previous run's files go
// (once the new experiment has been read without error).
void PrepareFreshRun(const std::string& run_dir, const std::string& config_path, bool overwrite) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string found;
  for (const char* name : kRunFiles)
    if (fs::exists(fs::path(run_dir) / name, ec)) found += (found.empty() ? "" : ", ") + std::string(name);
  if (found.empty()) return;
  if (!overwrite)
    throw CliError(run_dir + ": holds a previous run (" + found +
                   "); continue it with --resume, or replace it with --overwrite");
  const std::string config = Unwrap(ReadFile(config_path));
  Unwrap(ExperimentConfigFromYaml(config, config_path, fs::path(config_path).parent_path().string()));
  for (const char* name : kRunFiles) {
    fs::remove_all(fs::path(run_dir) / name, ec);
    if (ec) throw CliError((fs::path(run_dir) / name).string() + ": cannot remove: " + ec.message());
  }
}

// A --config given with --resume must be the run's own: resuming a run under another experiment is refused.
void CheckResumedConfig(const std::string& run_dir, const std::string& config_path) {
  const std::string state = (std::filesystem::path(run_dir) / "ckpt" / "state.json").string();
  Expected<std::string> state_text = ReadFile(state);
  if (!state_text) return;  // no checkpoint: TrainPolicy reports it
  const CheckpointMeta meta = Unwrap(CheckpointMetaFromJson(*state_text, state));
  const std::string config = Unwrap(ReadFile(config_path));
  if (config != meta.config_yaml)
    throw CliError(config_path + ": differs from the experiment of the run in " + run_dir + " (" + run_dir +
                   "/config.yaml); resume without --config, or start a new run in another directory");
}

}  // namespace

void RegisterTrainCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string config, run_dir;
    bool resume = false, overwrite = false, json = false;
    int64_t iterations = 0;
    double dist_timeout = 60.0;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("train", "Train a placement policy with PPO (docs/learning.md)");
  cmd->add_option("--config", opts->config, "Experiment YAML (configs/experiments/*.yaml)");
  cmd->add_option("-o,--output", opts->run_dir, "Run directory (log.csv, curve.png, ckpt/)")->required();
  cmd->add_flag("--resume", opts->resume, "Continue the run in the output directory from its checkpoint");
  cmd->add_flag("--overwrite", opts->overwrite, "Replace a previous run in the output directory (its files are removed)");
  cmd->add_option("--iterations", opts->iterations, "Stop after this many iterations (resumable later)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--dist-timeout", opts->dist_timeout,
                  "Distributed runs: seconds to wait for the other ranks (joining, each collective) before failing")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    if (opts->config.empty() && !opts->resume) throw CliError("train: --config is required (unless --resume)");
    TrainOptions options;
    options.distributed = Unwrap(DistributedConfigFromEnv(
        [](const char* name) -> const char* { return std::getenv(name); }, opts->dist_timeout));
    const bool lead = !options.distributed || options.distributed->rank == 0;  // rank 0 reports
    const bool terminal = lead && !opts->json && StderrIsTerminal();
    if (opts->resume && opts->overwrite) throw CliError("train: --resume and --overwrite exclude each other");
    if (lead && opts->resume && !opts->config.empty()) CheckResumedConfig(opts->run_dir, opts->config);
    if (lead && !opts->resume) PrepareFreshRun(opts->run_dir, opts->config, opts->overwrite);
    options.config_path = opts->config;
    options.run_dir = opts->run_dir;
    options.resume = opts->resume;
    options.max_iterations = opts->iterations;
    if (!opts->json) options.on_message = [](const std::string& m) { std::cerr << m << std::endl; };
    if (terminal) {
      options.on_iteration = [](const TrainIteration& it) {
        std::fprintf(stderr, "\r  iteration %lld  reward %.4f  time/T_ref %.3f (best %.3f)  entropy %.3f",
                     static_cast<long long>(it.iteration), it.mean_reward, it.mean_relative_time,
                     it.best_relative_time, it.entropy);
        if (it.heldout_relative_time > 0) std::fprintf(stderr, "  held-out %.3f", it.heldout_relative_time);
        std::fprintf(stderr, "  %lld evals  %.0f s   ", static_cast<long long>(it.evaluations), it.wall_seconds);
        if (it.heldout_relative_time > 0) std::fprintf(stderr, "\n");
      };
    }
    Expected<TrainSummary> trained = TrainPolicy(options);
    if (terminal) std::fprintf(stderr, "\n");
    TrainSummary summary = Unwrap(std::move(trained));
    if (!lead) {  // the other ranks of a group: RUN is rank 0's
      if (opts->json)
        PrintJson({{"rank", summary.rank}, {"world_size", summary.world_size}, {"iterations", summary.iterations}});
      else
        std::cerr << "rank " << summary.rank << " of " << summary.world_size << ": done after "
                  << summary.iterations << " iterations" << std::endl;
      ctx.exit_code = 0;
      return;
    }
    const bool curve = DrawCurve(opts->run_dir);
    if (opts->json) {
      PrintJson({{"iterations", summary.iterations},
                 {"evaluations", summary.evaluations},
                 {"checkpoint", summary.checkpoint_dir},
                 {"log", summary.log_path},
                 {"curve", curve ? opts->run_dir + "/curve.png" : ""},
                 {"heldout_relative_time", summary.heldout_relative_time},
                 {"world_size", summary.world_size}});
    } else {
      std::cout << "trained " << summary.iterations << " iterations (" << summary.evaluations
                << " simulator evaluations); checkpoint " << summary.checkpoint_dir << ", log " << summary.log_path;
      if (summary.heldout_relative_time > 0)
        std::cout << "; held-out zero-shot step time / best single device: " << summary.heldout_relative_time;
      std::cout << std::endl;
      if (!curve) std::cerr << "devplace: gnuplot unavailable or failed; no curve.png drawn" << std::endl;
    }
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli

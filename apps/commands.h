// Sub-command registration for the `devplace` program. Each Register* function adds one command group to
// `app`; a command's callback does its work, prints its output (human text, or exactly one JSON object on
// stdout with --json) and throws CliError (apps/cli_util.h) on bad input.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace devplace::cli {

// State shared between main and the command callbacks.
struct CommandContext {
  int exit_code = 0;  // returned by main after a command ran without throwing
  std::vector<std::string> args;  // the command line without the program name (for launchers that re-run it)
};

// `devplace graph ...`: creates the `graph` group with `info`, and returns it so other files add commands to it.
CLI::App* RegisterGraphCommands(CLI::App& app, CommandContext& ctx);
// `devplace graph gen` (families) and `devplace graph model` (the zoo).
void RegisterGraphGenCommands(CLI::App& graph_group, CommandContext& ctx);
// `devplace graph import FILE [--batch B] -o G.json` (ONNX models, Chakra traces).
void RegisterGraphImportCommand(CLI::App& graph_group, CommandContext& ctx);
// `devplace topo show`.
void RegisterTopoCommands(CLI::App& app, CommandContext& ctx);

// `devplace cost-error -g G -t T --costs C.json` (the analytic model's error against a profiled table, per op type).
void RegisterCostErrorCommand(CLI::App& app, CommandContext& ctx);

// `devplace search --algo A -g G -t T ... -o P.json`.
void RegisterSearchCommand(CLI::App& app, CommandContext& ctx);

// `devplace shard -g G -t T --spec S.yaml -o STRATEGY.json [--mesh RxC]` (sharding propagation over a mesh).
void RegisterShardCommand(CLI::App& app, CommandContext& ctx);

// `devplace reshard --topology T --src-mesh M --src-spec S --dst-mesh M --dst-spec S --shape ... [--method]
// [--balance] [--json]` (simulated cross-mesh resharding time).
void RegisterReshardCommand(CLI::App& app, CommandContext& ctx);

// `devplace simulate -g G -t T -p P [--costs C] [--trace X.json]`.
void RegisterSimulateCommand(CLI::App& app, CommandContext& ctx);

// `devplace train --config E.yaml -o RUN [--resume]` and `devplace place [--policy DIR] -g G -t T -o P.json`.
void RegisterTrainCommand(CLI::App& app, CommandContext& ctx);
void RegisterPlaceCommand(CLI::App& app, CommandContext& ctx);

// `devplace compare --suite S.yaml -o DIR`.
void RegisterCompareCommand(CLI::App& app, CommandContext& ctx);

// The executor (exec/): `devplace run -g G -t T -p P`, `devplace profile -g G -o C.json`,
// `devplace calibrate -t T -o T-calibrated.yaml` and `devplace validate --suite V.yaml -o DIR`.
void RegisterRunCommand(CLI::App& app, CommandContext& ctx);
void RegisterProfileCommand(CLI::App& app, CommandContext& ctx);
void RegisterCalibrateCommand(CLI::App& app, CommandContext& ctx);
void RegisterValidateCommand(CLI::App& app, CommandContext& ctx);

}  // namespace devplace::cli

// The shape of the inspect-a-file commands (`graph info G.json`, `topo show T.yaml`): one positional file and
// --json, printing one JSON object or a human summary.
#pragma once

#include <functional>
#include <string>

#include "apps/commands.h"

namespace devplace::cli {

// A command that reads one file and summarises it.
struct FileCommand {
  std::string name;         // subcommand name, e.g. "info"
  std::string description;  // its --help line
  std::string file_name;    // the positional argument's name, e.g. "graph"
  std::string file_help;    // and its help
  // Reads the file and prints the summary (one JSON object when `json`); throws CliError on bad input.
  std::function<void(const std::string& path, bool json)> run;
};

// Adds `command` to `group`: `NAME FILE [--json]`; a run that returns sets the exit code to 0.
void AddFileCommand(CLI::App* group, CommandContext& ctx, FileCommand command);

}  // namespace devplace::cli

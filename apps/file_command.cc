#include "apps/file_command.h"

#include <memory>

namespace devplace::cli {

void AddFileCommand(CLI::App* group, CommandContext& ctx, FileCommand command) {
  struct Options {
    std::string path;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = group->add_subcommand(command.name, command.description);
  cmd->add_option(command.file_name, opts->path, command.file_help)->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx, run = std::move(command.run)]() {
    run(opts->path, opts->json);
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli

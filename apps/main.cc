// The `devplace` command-line program: parses the command line, dispatches to a command group and turns
// every failure into one line on stderr and a non-zero exit status.
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "core/allocator.h"
#include "core/check.h"

int main(int argc, char** argv) {
  devplace::KeepFreedMemoryForReuse();  // simulations and tensors are built and dropped over and over
  CLI::App app{"devplace: device placement for deep-learning training graphs", "devplace"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "devplace 0.1");
  devplace::cli::CommandContext ctx;
  ctx.args.assign(argv + 1, argv + argc);
  CLI::App* graph = devplace::cli::RegisterGraphCommands(app, ctx);
  devplace::cli::RegisterGraphGenCommands(*graph, ctx);
  devplace::cli::RegisterGraphImportCommand(*graph, ctx);
  devplace::cli::RegisterTopoCommands(app, ctx);
  devplace::cli::RegisterSimulateCommand(app, ctx);
  devplace::cli::RegisterCostErrorCommand(app, ctx);
  devplace::cli::RegisterSearchCommand(app, ctx);
  devplace::cli::RegisterShardCommand(app, ctx);
  devplace::cli::RegisterReshardCommand(app, ctx);
  devplace::cli::RegisterCompareCommand(app, ctx);
  devplace::cli::RegisterTrainCommand(app, ctx);
  devplace::cli::RegisterPlaceCommand(app, ctx);
  devplace::cli::RegisterRunCommand(app, ctx);
  devplace::cli::RegisterProfileCommand(app, ctx);
  devplace::cli::RegisterCalibrateCommand(app, ctx);
  devplace::cli::RegisterValidateCommand(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A first word that is no command gets named (CLI11 would only say that a subcommand is required).
    std::string commands;
    bool known = argc < 2 || argv[1][0] == '-';
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      commands += (commands.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::cerr << "devplace: unknown command '" << argv[1] << "' (commands: " << commands << ")" << std::endl;
      return 2;
    }
    std::cerr << "devplace: " << devplace::cli::ShortenNumbers(e.what()) << " (see --help)" << std::endl;
    return 2;
  } catch (const devplace::cli::CliError& e) {
    std::cerr << "devplace: " << e.what() << std::endl;
    return 1;
  } catch (const devplace::InternalError& e) {
    std::cerr << "devplace: " << e.what() << " (please report this bug)" << std::endl;
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "devplace: " << e.what() << std::endl;
    return 1;
  }
  return ctx.exit_code;
}

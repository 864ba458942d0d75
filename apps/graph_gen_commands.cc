// `devplace graph gen --family F --seed N [--target-ops K] -o G.json` and
// `devplace graph model NAME [--batch B] -o G.json`: write training graphs from the families and the zoo.
#include <iostream>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "core/graph_json.h"
#include "datasets/families.h"
#include "datasets/zoo.h"

namespace devplace::cli {

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void ReportWritten(const Graph& g, const std::string& path, bool json) {
  if (json) {
    PrintJson({{"path", path},
               {"name", g.name()},
               {"num_ops", g.num_ops()},
               {"num_edges", g.num_edges()},
               {"total_flops", g.total_flops()},
               {"param_bytes", g.total_param_bytes()}});
  } else {
    std::cout << "wrote " << path << ": graph " << g.name() << ", " << g.num_ops() << " ops, " << g.num_edges()
              << " edges, " << FormatCount(g.total_flops()) << "FLOPs per step, "
              << FormatBytes(static_cast<double>(g.total_param_bytes())) << " of parameters\n";
  }
}

}  // namespace

void RegisterGraphGenCommands(CLI::App& graph, CommandContext& ctx) {
  struct GenOptions {
    std::string family, output;
    uint64_t seed = 0;
    int32_t target_ops = 0;
    bool json = false;
  };
  auto gen_opts = std::make_shared<GenOptions>();
  CLI::App* gen = graph.add_subcommand("gen", "Generate a member of a graph family (a training graph)");
  gen->add_option("--family", gen_opts->family, "Family: " + JoinNames(FamilyNames()))->required();
  gen->add_option("--seed", gen_opts->seed, "Seed selecting the member (default 0)");
  gen->add_option("--target-ops", gen_opts->target_ops,
                  "Scale the member to about this many ops (default: the family's natural size for the seed)")
      ->check(CLI::NonNegativeNumber);
  gen->add_option("-o,--output", gen_opts->output, "Output graph JSON file")->required();
  gen->add_flag("--json", gen_opts->json, "Print one JSON object on stdout");
  gen->callback([gen_opts, &ctx]() {
    FamilyOptions options;
    options.target_ops = gen_opts->target_ops;
    Graph g = Unwrap(GenerateFamilyMember(gen_opts->family, gen_opts->seed, options));
    Check(WriteGraphFile(g, gen_opts->output));
    ReportWritten(g, gen_opts->output, gen_opts->json);
    ctx.exit_code = 0;
  });

  struct ModelOptions {
    std::string name, output;
    int64_t batch = 0;
    bool json = false;
  };
  auto model_opts = std::make_shared<ModelOptions>();
  CLI::App* model = graph.add_subcommand("model", "Build a model of the zoo as a training graph");
  model->add_option("name", model_opts->name, "Model: " + JoinNames(ZooModelNames()))->required();
  model->add_option("--batch", model_opts->batch, "Batch size (default: the batch the literature uses)")
      ->check(CLI::PositiveNumber);
  model->add_option("-o,--output", model_opts->output, "Output graph JSON file")->required();
  model->add_flag("--json", model_opts->json, "Print one JSON object on stdout");
  model->callback([model_opts, &ctx]() {
    Graph g = Unwrap(BuildZooModel(model_opts->name, model_opts->batch));
    Check(WriteGraphFile(g, model_opts->output));
    ReportWritten(g, model_opts->output, model_opts->json);
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli

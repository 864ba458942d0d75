// `devplace place [--policy DIR] -g G -t T [--samples K] [--no-uniform] [--coherence-passes K] [--mesh RxC]
// [--finetune-evals N] [--seed S] [--costs C] -o P.json [--json]`: places a graph with a trained policy (the shipped models/soap-context when --policy is not
// given), zero-shot (greedy, or the best of greedy and K sampled placements) or after fine-tuning within a budget
// of simulator evaluations. A SOAP policy also splits over the lines of the topology file's meshes and --mesh.
#include <cstdio>
#include <iostream>

#include "agents/learned/learning.h"
#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "core/mesh.h"
#include "core/strategy_json.h"
#include "env/config.h"

namespace devplace::cli {

void RegisterPlaceCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string policy, graph, topology, costs, output, mesh;
    int64_t finetune_evals = 0;
    double finetune_seconds = 0;
    double finetune_temperature = 0;
    int32_t samples = 0;
    double sample_temperature = 0;
    int32_t coherence_passes = 0;
    uint64_t seed = 0;
    bool uniform = true;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("place", "Place a graph with a trained policy (zero-shot or fine-tuned)");
  cmd->add_option("--policy", opts->policy,
                  "Checkpoint directory (RUN/ckpt), or a directory whose ensemble.json names checkpoints that "
                  "place together (default: the shipped models/soap-context)");
  cmd->add_option("-g,--graph", opts->graph, "Graph JSON file")->required();
  cmd->add_option("-t,--topology", opts->topology, "Topology YAML file")->required();
  cmd->add_option("--finetune-evals", opts->finetune_evals, "Fine-tune with at most this many simulations (0: zero-shot)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--finetune-seconds", opts->finetune_seconds, "Also stop fine-tuning after this many seconds")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--finetune-temperature", opts->finetune_temperature,
                  "Sampling temperature while fine-tuning (default: the policy's ppo.temperature, usually 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--samples", opts->samples,
                  "Also sample this many placements from the policy and keep the best (one simulation each; default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--sample-temperature", opts->sample_temperature,
                  "Sampling temperature of --samples (default: the policy's ppo.temperature, usually 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--coherence-passes", opts->coherence_passes,
                  "Run the policy's coherence pass this many times, each on the previous pass's actions (default: "
                  "the policy's own count; models/soap-context: 2)")
      ->check(CLI::Range(1, 8));
  cmd->add_option("--mesh", opts->mesh,
                  "A SOAP policy also splits over the lines of this mesh shape's axes, e.g. 2x4 (beside the "
                  "topology file's meshes:)");
  cmd->add_option("--seed", opts->seed, "Seed for sampling and fine-tuning (default 0)");
  cmd->add_flag("--uniform,!--no-uniform", opts->uniform,
                "Also try the fastest uniform split (every group on one sample split, e.g. data parallelism; "
                "simulated while the environment is built) and keep it if it beats the policy (default on; "
                "--no-uniform: the policy's placement only)");
  cmd->add_option("--costs", opts->costs, "Profiled cost table (default: the analytic cost model)");
  cmd->add_option("-o,--output", opts->output, "Output strategy JSON file")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    const std::string policy_dir = opts->policy.empty() ? DefaultPolicyDir() : opts->policy;
    Graph graph = LoadGraph(opts->graph);
    if (graph.num_ops() == 0) throw CliError(opts->graph + ": ops: the graph has no ops (nothing to place)");
    Topology topology = LoadTopology(opts->topology);
    CostModel cost = LoadCostModel(opts->costs);
    std::unique_ptr<LearnedPolicy> policy = Unwrap(LearnedPolicy::Load(policy_dir));
    PlaceOptions options;
    if (policy->experiment().env.action_space == ActionSpace::kSoap) {
      // As in training: the topology file's meshes add their axes' device lines to the SOAP candidates.
      options.meshes = Unwrap(ReadTopologyMeshes(opts->topology, topology));
      if (!opts->mesh.empty()) {
        Expected<Mesh> mesh = MeshFromShorthand(opts->mesh, {}, topology, "cli-" + opts->mesh);
        if (!mesh) throw CliError("--mesh: " + mesh.error().message);
        options.meshes.push_back(std::move(mesh).value());
      }
    } else if (!opts->mesh.empty()) {
      throw CliError("--mesh: the policy in " + policy_dir + " does not split (env.action_space is not soap)");
    }
    options.finetune_evaluations = opts->finetune_evals;
    options.max_seconds = opts->finetune_seconds;
    options.finetune_temperature = opts->finetune_temperature;
    options.samples = opts->samples;
    options.sample_temperature = opts->sample_temperature;
    options.seed = opts->seed;
    options.uniform = opts->uniform;
    options.coherence_passes = opts->coherence_passes;
    const bool draw_progress = !opts->json && StderrIsTerminal() && opts->finetune_evals > 0;
    if (draw_progress) {
      options.progress = [](int64_t evaluations, double best) {
        std::fprintf(stderr, "\r  fine-tuning: %lld evaluations, best step %.3f ms   ",
                     static_cast<long long>(evaluations), best * 1e3);
      };
    }
    PlaceResult result = Unwrap(policy->Place(graph, topology, cost, SimOptions{}, options));
    if (draw_progress) std::fprintf(stderr, "\n");
    Check(WriteStrategyFile(result.strategy, graph, topology, opts->output));
    if (opts->json) {
      PrintJson({{"policy", policy_dir},
                 {"ensemble_size", policy->ensemble_size()},
                 {"graph", graph.name()},
                 {"topology", topology.name()},
                 {"groups", result.num_groups},
                 {"actions", result.num_actions},
                 {"step_time", result.step_time},
                 {"oom", result.oom},
                 {"zero_shot_step_time", result.zero_shot_step_time},
                 {"zero_shot_oom", result.zero_shot_oom},
                 {"samples", opts->samples},
                 {"sampled_step_time", result.sampled_step_time},
                 {"sampled_oom", result.sampled_oom},
                 {"uniform_step_time", result.uniform_step_time},
                 {"evaluations", result.evaluations},
                 {"seconds", result.seconds},
                 {"output", opts->output}});
    } else {
      std::cout << "placed " << graph.name() << " (" << result.num_groups << " groups) on " << topology.name()
                << ": step time " << FormatSeconds(result.step_time) << (result.oom ? " (OUT OF MEMORY)" : "");
      if (opts->finetune_evals > 0 || opts->samples > 0)
        std::cout << ", greedy " << FormatSeconds(result.zero_shot_step_time);
      if (opts->finetune_evals > 0 && opts->samples > 0)
        std::cout << ", best of " << opts->samples << " samples " << FormatSeconds(result.sampled_step_time);
      std::cout << "; " << result.evaluations << " evaluations, " << FormatSeconds(result.seconds) << "; wrote "
                << opts->output << std::endl;
    }
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli

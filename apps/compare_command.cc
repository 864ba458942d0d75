// `devplace compare --suite S.yaml -o DIR [--threads N] [--resume] [--json]`: runs every (model, topology,
// algorithm) cell of a suite with the suite's budget and seed (workflows/compare.h), and writes DIR/results.md,
// DIR/results.csv and DIR/chart.png; DIR/cells.json records the finished cells, from which --resume continues an
// interrupted run.
#include <cstdio>
#include <iostream>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "config/compare_suite.h"
#include "workflows/compare.h"

namespace devplace::cli {

void RegisterCompareCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string suite, output;
    bool json = false, resume = false;
    int32_t threads = 0;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("compare", "Run every (model, topology, algorithm) cell of a suite");
  cmd->add_option("--suite", opts->suite, "Suite YAML file (see configs/suites/)")->required();
  cmd->add_option("-o,--output", opts->output, "Output directory (results.md, results.csv, chart.png)")->required();
  cmd->add_flag("--resume", opts->resume,
                "Continue an interrupted run in the output directory (its finished cells are not recomputed)");
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->add_option("--threads", opts->threads, "Cells run at once (default 0: one per core; results do not depend on it)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([opts, &ctx]() {
    const CompareSuite suite = Unwrap(ReadCompareSuite(opts->suite));
    CompareRunOptions options{opts->output, "devplace compare --suite " + opts->suite + " -o " + opts->output,
                              opts->resume, {}};
    options.threads = opts->threads;
    if (!opts->json) {
      // Cells finish in any order on several threads: one whole line per finished cell.
      options.on_cell = [](size_t index, size_t total, const CompareCell& c, bool done) {
        if (!done) return;
        std::fprintf(stderr, "[%zu/%zu] %s on %s: %s ...", index + 1, total, c.model.c_str(), c.topology.c_str(),
                     c.algorithm.c_str());
        if (c.ok)
          std::fprintf(stderr, " %.3f ms%s (%.1f s%s)\n", c.step_time * 1e3, c.oom ? " OOM" : "", c.search_seconds,
                       c.resumed ? ", resumed" : "");
        else
          std::fprintf(stderr, " error: %s\n", c.error.c_str());
      };
    }
    const CompareRun run = Unwrap(RunCompareSuite(suite, options));
    if (!run.chart.ok()) std::cerr << "devplace: warning: " << run.chart.error().message << "\n";
    if (opts->json) {
      nlohmann::json rows = nlohmann::json::array();
      for (const CompareCell& c : run.cells)
        rows.push_back({{"model", c.model}, {"topology", c.topology}, {"algorithm", c.algorithm}, {"ok", c.ok},
                        {"step_time_ms", c.step_time * 1e3}, {"oom", c.oom}, {"evaluations", c.evaluations},
                        {"search_seconds", c.search_seconds}, {"resumed", c.resumed},
                        {"speedup_over_baseline", SpeedupOverBaseline(run.cells, c, suite.baseline)}});
      PrintJson({{"suite", suite.name}, {"output", opts->output}, {"cells", rows}, {"failed", run.failed},
                 {"chart", run.chart.ok()}});
    } else {
      std::cout << "wrote " << opts->output << "/results.md, results.csv" << (run.chart.ok() ? ", chart.png" : "")
                << " (" << run.cells.size() << " cells, " << run.failed << " failed)\n";
    }
    ctx.exit_code = run.failed ? 1 : 0;
  });
}

}  // namespace devplace::cli

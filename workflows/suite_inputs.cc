#include "workflows/suite_inputs.h"

#include <filesystem>

namespace devplace {

Expected<std::vector<Graph>> BuildSuiteGraphs(const std::vector<GraphSource>& models, const std::string& source) {
  std::vector<Graph> graphs;
  for (size_t i = 0; i < models.size(); ++i) {
    Expected<Graph> g = BuildGraph(models[i]);
    if (!g) return Error{source + ": models[" + std::to_string(i) + "]: " + g.error().message};
    graphs.push_back(std::move(g).value());
  }
  return graphs;
}

Status CreateOutputDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{dir + ": cannot create directory: " + ec.message()};
  return Status::Ok();
}

}  // namespace devplace

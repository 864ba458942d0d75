#include "datasets/graph_source.h"

#include <filesystem>

#include "core/graph_json.h"
#include "datasets/families.h"
#include "datasets/zoo.h"

namespace devplace {

std::string GraphSource::label() const {
  if (!zoo.empty()) return batch > 0 ? zoo + "-b" + std::to_string(batch) : zoo;
  if (!family.empty())
    return family + "-s" + std::to_string(seed) + (target_ops > 0 ? "-n" + std::to_string(target_ops) : "");
  return std::filesystem::path(file).stem().string();
}

Expected<Graph> BuildGraph(const GraphSource& source) {
  if (!source.family.empty()) {
    Expected<Graph> g = GenerateFamilyMember(source.family, source.seed, {source.target_ops});
    if (!g) return Error{"graph " + source.label() + ": " + g.error().message};
    return g;
  }
  if (!source.zoo.empty()) {
    Expected<Graph> g = BuildZooModel(source.zoo, source.batch);
    if (!g) return Error{"graph " + source.label() + ": " + g.error().message};
    return g;
  }
  return ReadGraphFile(source.file);  // its errors already name the file
}

}  // namespace devplace

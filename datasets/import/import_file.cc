// ImportModelFile: reads a file and dispatches on its content (JSON text: Chakra trace; otherwise ONNX).
#include <filesystem>

#include "core/atomic_file.h"
#include "datasets/import/importers.h"

namespace devplace {

namespace {

// The first byte that is not white space, or 0.
char FirstSignificant(const std::string& text) {
  for (char c : text)
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
  return 0;
}

}  // namespace

Expected<ImportResult> ImportModelFile(const std::string& path, const ImportOptions& options) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  if (text->empty()) return Error{path + ": the file is empty"};
  const std::string name = std::filesystem::path(path).stem().string();
  const char first = FirstSignificant(*text);
  if (first == '{' || first == '[') return ImportChakraTrace(*text, path, name, options);
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".json") return Error{path + ": not a JSON document (a Chakra trace starts with '{' or '[')"};
  if (ext == ".et")
    return Error{path + ": binary Chakra traces are not read: convert them to JSON with chakra_jsonizer first"};
  return ImportOnnxModel(*text, path, name.empty() ? "model" : name, options);
}

}  // namespace devplace

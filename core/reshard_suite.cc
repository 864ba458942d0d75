#include "core/reshard_suite.h"

#include <set>

#include "core/atomic_file.h"
#include "core/json_reader.h"

namespace devplace {

Expected<ReshardSuite> ReshardSuiteFromYaml(const std::string& text, const std::string& source) {
  return CatchInputErrors<ReshardSuite>([&]() {
    nlohmann::json doc = ParseYamlAsJson(text, source);
    JsonObject root(doc, source, "");
    ReshardSuite suite;
    suite.description = root.string_or("description", "");
    if (root.has("elem_bytes")) {
      suite.elem_bytes = ReadInteger(root.required("elem_bytes"), source, "elem_bytes", 1, 64);
    }
    const nlohmann::json& list = RequireArray(root.required("cases"), source, "cases");
    if (list.empty()) FailAt(source, "cases", "needs at least one case");
    std::set<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      JsonObject obj(list[i], source, "cases[" + std::to_string(i) + "]");
      ReshardCase c;
      c.name = obj.string("name");
      if (!names.insert(c.name).second) obj.fail("name", "'" + c.name + "' is used by an earlier case");
      c.src_mesh = obj.string("src_mesh");
      c.src_spec = obj.string("src_spec");
      c.dst_mesh = obj.string("dst_mesh");
      c.dst_spec = obj.string("dst_spec");
      c.note = obj.string_or("note", "");
      const nlohmann::json& shape = RequireArray(obj.required("shape"), source, obj.path_of("shape"));
      if (shape.empty()) obj.fail("shape", "needs at least one extent");
      for (size_t j = 0; j < shape.size(); ++j)
        c.shape.push_back(ReadInteger(shape[j], source, obj.path_of("shape") + "[" + std::to_string(j) + "]", 1,
                                      int64_t{1} << 40));
      obj.finish();
      suite.cases.push_back(std::move(c));
    }
    root.finish();
    return suite;
  });
}

Expected<ReshardSuite> ReadReshardSuiteFile(const std::string& path) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return ReshardSuiteFromYaml(*text, path);
}

}  // namespace devplace

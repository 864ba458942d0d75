// Model-level preparation for the ONNX importer: external data resolved against the model's directory (small
// tensors read inline so that folding sees them), and ONNX's checker run with that directory.
#include <filesystem>
#include <fstream>

#include <onnx/checker.h>

#include "datasets/import/one_line.h"
#include "datasets/import/onnx_internal.h"

namespace onnx::checker {
// Defined (and exported) by libonnx 1.12 but not declared in its header: the checker with a context, which
// carries the directory external data paths are relative to.
void check_model(const ModelProto& model, CheckerContext& ctx);
}  // namespace onnx::checker

namespace devplace::onnx_import {

namespace {

// Elements of a tensor of at most kMaxFoldElements elements, else -1.
int64_t SmallCount(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims())
    if (d < 0 || (n *= d) > kMaxFoldElements) return -1;
  return n;
}

// Reads the external data of `t` (entries location, offset, length) into raw_data.
Status Inline(onnx::TensorProto* t, const std::filesystem::path& dir, const std::string& source) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& e : t->external_data()) {
    try {
      if (e.key() == "location") location = e.value();
      else if (e.key() == "offset") offset = std::stoll(e.value());
      else if (e.key() == "length") length = std::stoll(e.value());
    } catch (const std::exception&) {
      return Error{source + ": tensor '" + t->name() + "': external_data " + e.key() + ": not a number"};
    }
  }
  const std::string where = source + ": tensor '" + t->name() + "': external data '" + location + "'";
  const std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute() || location.find("..") != std::string::npos)
    return Error{where + ": the location must be a relative path inside the model's directory"};
  const std::filesystem::path file = dir / rel;
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error{where + ": cannot open " + file.string() + " (resolved against the model's directory)"};
  const int64_t need = ElementBytes(t->data_type()) * SmallCount(*t);
  if (length < 0) length = need;
  in.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(in.tellg());
  if (offset < 0 || length != need || offset + length > size)
    return Error{where + ": offset " + std::to_string(offset) + " and length " + std::to_string(length) +
                 " do not fit the tensor's " + std::to_string(need) + " bytes in a file of " + std::to_string(size)};
  std::string data(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(data.data(), length);
  t->clear_external_data();
  t->clear_data_location();
  t->set_raw_data(std::move(data));
  return Status::Ok();
}

}  // namespace

Status PrepareAndCheck(onnx::ModelProto* model, const std::string& model_dir, const std::string& source) {
  const std::filesystem::path dir = model_dir.empty() ? std::filesystem::path(".") : std::filesystem::path(model_dir);
  for (onnx::TensorProto& t : *model->mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) continue;
    if (SmallCount(t) >= 0 && ElementBytes(t.data_type()) > 0)  // small enough to fold: read it now
      if (Status s = Inline(&t, dir, source); !s.ok()) return s;
  }
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_model_dir(dir.string() + "/");
    onnx::checker::check_model(*model, ctx);
  } catch (const std::exception& e) {
    return Error{source + ": invalid ONNX model: " + import_detail::OneLine(e.what())};
  }
  return Status::Ok();
}

}  // namespace devplace::onnx_import

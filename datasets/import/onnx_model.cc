// Model-level preparation for the ONNX importer: models of opset 18 and later (and IR 9 and later) rewritten
// to the opset-17 forms Debian's libonnx 1.12 knows, external data resolved against the model's directory (small
// tensors read inline so that folding sees them), and ONNX's checker run with that directory.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

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

// The location of `t`'s external data (its "location" entry) as a file inside `dir`: an absolute path, one that
// climbs out with "..", or one that leads out through a symbolic link is refused, as is a file that is not there.
Expected<std::filesystem::path> ExternalFile(const onnx::TensorProto& t, const std::filesystem::path& dir,
                                             const std::string& source) {
  namespace fs = std::filesystem;
  std::string location;
  for (const auto& e : t.external_data())
    if (e.key() == "location") location = e.value();
  const std::string where = source + ": tensor '" + t.name() + "': external data '" + location + "'";
  const fs::path rel(location);
  if (location.empty() || rel.is_absolute() || location.find("..") != std::string::npos)
    return Error{where + ": the location must be a relative path inside the model's directory"};
  const fs::path file = dir / rel;
  std::error_code ec;
  const fs::path real_dir = fs::canonical(dir, ec);
  const fs::path real = ec ? fs::path() : fs::canonical(file, ec);
  if (ec) return Error{where + ": cannot open " + file.string() + " (resolved against the model's directory)"};
  const auto [d, r] = std::mismatch(real_dir.begin(), real_dir.end(), real.begin(), real.end());
  if (d != real_dir.end() || r == real.end())
    return Error{where + ": leads outside the model's directory (to " + real.string() + ", through a symbolic link)"};
  return file;
}

// Reads the external data of `t` (entries location, offset, length; the location resolved to `file` by
// ExternalFile) into raw_data.
Status Inline(onnx::TensorProto* t, const std::filesystem::path& file, const std::string& source) {
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
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error{where + ": cannot open " + file.string()};
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

// The newest opset and IR version libonnx 1.12 knows.
constexpr int64_t kKnownOpset = 17, kKnownIrVersion = 8;

// Removes attribute `name` from `node` when it holds its default (`is_default`); false when it holds another
// value, which opset 17 cannot express.
template <typename IsDefault>
bool DropDefault(onnx::NodeProto* node, const std::string& name, IsDefault is_default) {
  auto* attrs = node->mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i)
    if ((*attrs)[i].name() == name) {
      if (!is_default((*attrs)[i])) return false;
      attrs->DeleteSubrange(i, 1);
      return true;
    }
  return true;
}

bool IsZero(const onnx::AttributeProto& a) { return a.i() == 0; }

// Rewrites one node of opset 18..(newer) to its opset-17 form; an error names what opset 17 cannot express.
Status DowngradeNode(const onnx::GraphProto& g, onnx::NodeProto* node, const std::string& source) {
  static const std::set<std::string> kReduceAxesInput = {"ReduceL1",  "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp",
                                                         "ReduceMax", "ReduceMean", "ReduceMin",   "ReduceProd",
                                                         "ReduceSumSquare"};
  const std::string& op = node->op_type();
  const std::string what = source + ": " + Describe(*node) + ": ";
  bool ok = true;
  if (kReduceAxesInput.count(op)) {  // opset 18 moved axes from an attribute to an optional input
    if (node->input_size() > 1 && !node->input(1).empty()) {
      std::vector<int64_t> axes;
      if (!ConstantInts(g, node->input(1), &axes))
        return Error{what + "axes computed at run time cannot be read (only constant axes are supported)"};
      if (!axes.empty()) {
        onnx::AttributeProto* a = node->add_attribute();
        a->set_name("axes");
        a->set_type(onnx::AttributeProto_AttributeType_INTS);
        for (int64_t v : axes) a->add_ints(v);
      } else {
        ok = DropDefault(node, "noop_with_empty_axes", IsZero);
      }
    }
    node->mutable_input()->DeleteSubrange(1, std::max(0, node->input_size() - 1));
    ok = ok && DropDefault(node, "noop_with_empty_axes", IsZero);
  } else if (op == "Split") {  // opset 18 added num_outputs (an even split into the outputs, as 13 does)
    ok = DropDefault(node, "num_outputs", [&](const onnx::AttributeProto& a) { return a.i() == node->output_size(); });
  } else if (op == "Resize") {  // 18 added antialias, axes, keep_aspect_ratio_policy; 19 half_pixel_symmetric
    ok = DropDefault(node, "antialias", IsZero) && DropDefault(node, "axes", [](const auto& a) { return a.ints().empty(); }) &&
         DropDefault(node, "keep_aspect_ratio_policy", [](const auto& a) { return a.s() == "stretch"; }) &&
         AttrString(*node, "coordinate_transformation_mode", "half_pixel") != "half_pixel_symmetric";
  } else if (op == "Pad") {  // 18 added the axes input, 19 the wrap mode
    ok = (node->input_size() < 4 || node->input(3).empty()) && AttrString(*node, "mode", "constant") != "wrap";
    if (node->input_size() == 4) node->mutable_input()->RemoveLast();
  } else if (op == "Cast" || op == "CastLike") {  // 19 added saturate (float8 only)
    ok = DropDefault(node, "saturate", [](const onnx::AttributeProto&) { return true; });
  } else if (op == "AveragePool" || op == "LpPool") {  // 19 added dilations to AveragePool, 18 ceil_mode to LpPool
    ok = DropDefault(node, "dilations", [](const auto& a) {
           return std::all_of(a.ints().begin(), a.ints().end(), [](int64_t d) { return d == 1; });
         }) && (op != "LpPool" || DropDefault(node, "ceil_mode", IsZero));
  } else if (op == "ScatterElements" || op == "ScatterND") {  // 18 added the max and min reductions
    const std::string r = AttrString(*node, "reduction", "none");
    ok = r != "max" && r != "min";
  }
  if (!ok) return Error{what + "uses an opset-18+ feature that opset 17 cannot express (devplace reads opset 18+ models "
                               "through ONNX 1.12, which knows opset 17)"};
  return Status::Ok();
}

}  // namespace

bool ConstantInts(const onnx::GraphProto& g, const std::string& name, std::vector<int64_t>* out) {
  const onnx::TensorProto* t = nullptr;
  for (const auto& init : g.initializer())
    if (init.name() == name) t = &init;
  for (const auto& n : g.node())
    if (n.op_type() == "Constant" && n.output_size() == 1 && n.output(0) == name)
      for (const auto& a : n.attribute())
        if (a.name() == "value" && a.has_t()) t = &a.t();
  ConstValue v;
  if (!t) return false;
  Expected<bool> read = ReadTensor(*t, "", &v);
  if (!read.ok() || !*read || !v.is_int()) return false;
  *out = v.ints;
  return true;
}

Status DowngradeToKnownOpset(onnx::ModelProto* model, const std::string& source, std::vector<std::string>* warnings) {
  onnx::OperatorSetIdProto* onnx_opset = nullptr;
  for (auto& o : *model->mutable_opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") onnx_opset = &o;
  const int64_t ir = model->ir_version();
  if (ir > kKnownIrVersion) model->set_ir_version(kKnownIrVersion);
  if (!onnx_opset || onnx_opset->version() <= kKnownOpset) {
    if (ir > kKnownIrVersion)
      warnings->push_back(source + ": IR version " + std::to_string(ir) + " read as IR " +
                          std::to_string(kKnownIrVersion) + " (ONNX 1.12's newest)");
    return Status::Ok();
  }
  const int64_t opset = onnx_opset->version();
  for (onnx::NodeProto& node : *model->mutable_graph()->mutable_node())
    if (node.domain().empty() || node.domain() == "ai.onnx")
      if (Status s = DowngradeNode(model->graph(), &node, source); !s.ok()) return s;
  onnx_opset->set_version(kKnownOpset);
  warnings->push_back(source + ": IR " + std::to_string(ir) + ", opset " + std::to_string(opset) + " read as IR " +
                      std::to_string(std::min(ir, kKnownIrVersion)) + ", opset 17 (ONNX 1.12's newest): nodes "
                      "rewritten to their opset-17 forms; operators newer than opset 17 are not known");
  return Status::Ok();
}

Status PrepareAndCheck(onnx::ModelProto* model, const std::string& model_dir, const std::string& source) {
  const std::filesystem::path dir = model_dir.empty() ? std::filesystem::path(".") : std::filesystem::path(model_dir);
  for (onnx::TensorProto& t : *model->mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) continue;
    Expected<std::filesystem::path> file = ExternalFile(t, dir, source);
    if (!file.ok()) return file.error();
    if (SmallCount(t) >= 0 && ElementBytes(t.data_type()) > 0)  // small enough to fold: read it now
      if (Status s = Inline(&t, *file, source); !s.ok()) return s;
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

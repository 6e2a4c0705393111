// Image blocks of the Python API written as the ONNX op they stand for: depth_to_space and
// space_to_depth (blocks of reshapes and a transpose) as DepthToSpace (DCR order, the
// engine's) and SpaceToDepth over [N, C, H, W], N being the batch axis (export_batch.h),
// so that the reader gives them the batch meaning ONNX's image ops have.
#include "onnx/export_batch.h"
#include "onnx/export_block.h"

namespace cntk::onnx_io {

std::optional<BlockClaim> claim_image_block(const FunctionPtr& block) {
  const std::string& op = block->op_name();
  if (op != "DepthToSpace" && op != "SpaceToDepth") return std::nullopt;
  const auto& args = block->block_arguments_mapping();
  const NDShape in = args.size() == 1 ? args[0].second.shape() : NDShape{};
  const NDShape out = block->output().shape();
  if (in.rank() != 3 || out.rank() != 3 || !in.is_known() || !out.is_known()) return std::nullopt;
  // The block size, from the spatial sizes (the block keeps no attribute of it).
  const int64_t b = op == "DepthToSpace" ? out[1] / in[1] : in[1] / out[1];
  BlockClaim claim;
  claim.inputs = {args[0].second};
  claim.write = [op, b](ExportContext& c, const SetStrings&) {
    std::vector<Attr> attrs{Attr("blocksize", b)};
    if (op == "DepthToSpace" && c.opset() >= 11) attrs.emplace_back("mode", "DCR");
    over_batch_export(c, 0, [&](const std::string& x, const std::string& y) { return c.node1(op, {x}, attrs, y); });
  };
  return claim;
}

}  // namespace cntk::onnx_io

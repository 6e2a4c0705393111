// ONNX's RMSNormalization (opset 23): x / sqrt(mean(x^2) + epsilon) * scale over the axes
// from `axis` on, as a reduction and elementwise ops (the engine has no single op for it).
#include "onnx/import_axes.h"

namespace cntk::onnx_io {

void register_import_rms_norm() {
  register_onnx_import(
      "RMSNormalization",
      [](ImportContext& c) {
        auto out = [](const FunctionPtr& f) { return f->output(); };
        Variable x = c.input(0);
        const DataType dt = x.dtype();
        // stash_type 1 (the default) computes in float32 and casts the result back.
        const bool stash = c.attr_int("stash_type", 1) == 1 && dt != DataType::Float;
        auto cast = [&](const Variable& v, DataType to) {
          return v.dtype() == to ? v : out(c.primitive("Cast", {v}, Dictionary{{"newDataType", int64_t(to)}}));
        };
        if (stash) x = cast(x, DataType::Float);
        const int64_t first = static_axis_of(c, 0, c.attr_int("axis", -1)), rank = int64_t(x.shape().rank());
        std::vector<int64_t> axes;
        for (int64_t a = first; a < rank; ++a) axes.push_back(a);
        Variable ms = out(c.primitive("ReduceElements", {out(c.primitive("ElementTimes", {x, x}))},
                                      Dictionary{{"reductionOpName", std::string("Mean")},
                                                 {"reductionKeepDimensions", true},
                                                 {"axisVec", axis_list(axes)}}));
        Variable eps =
            Variable::constant(NDShape{}, x.dtype(), double(c.attr_float("epsilon", 1e-5f)), c.name() + "/eps");
        Variable rms = out(c.primitive("Sqrt", {out(c.primitive("Plus", {ms, eps}))}));
        Variable y = cast(out(c.primitive("ElementDivide", {x, rms})), dt);
        return std::vector<Variable>{out(c.primitive("ElementTimes", {y, c.input(1)}))};
      },
      23);
}

}  // namespace cntk::onnx_io

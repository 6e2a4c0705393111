// The families of ONNX reader rules. Adding a family: one import_*.cpp file and one line here.
#include "onnx/import.h"

namespace cntk::onnx_io {

void register_import_elementwise();
void register_import_linalg();
void register_import_conv();
void register_import_norm();
void register_import_nn();
void register_import_rnn();
void register_import_tensor();
void register_import_resize();
void register_import_attention();
void register_import_reduce();
void register_import_movement();
void register_import_loss();
void register_import_rms_norm();
void register_import_einsum();
void register_import_quant();
void register_import_float();
void register_import_dft();
void register_import_training();
void register_import_ml();
void register_import_grid();
void register_import_control();
void register_import_image();

void register_onnx_import_rules() {
  register_import_elementwise();
  register_import_linalg();
  register_import_conv();
  register_import_norm();
  register_import_nn();
  register_import_rnn();
  register_import_tensor();
  register_import_resize();
  register_import_attention();
  register_import_reduce();
  register_import_movement();
  register_import_loss();
  register_import_rms_norm();
  register_import_einsum();
  register_import_quant();
  register_import_float();
  register_import_dft();
  register_import_training();
  register_import_ml();
  register_import_grid();
  register_import_control();
  register_import_image();
}

}  // namespace cntk::onnx_io

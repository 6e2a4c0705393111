// The list of op families. Adding a family: one file in src/ops and one line here.
namespace cntk {

void register_elementwise_ops();
void register_linalg_ops();
void register_reduce_ops();
void register_identity_ops();
void register_movement_ops();
void register_nn_ops();
void register_random_ops();
void register_loss_ops();
void register_user_function_ops();
void register_norm_ops();
void register_sequence_delay_ops();
void register_sequence_ops();
void register_sequence_criterion_ops();
void register_conv_ops();
void register_rnn_stack_ops();
void register_lattice_ops();

void register_all_op_families() {
  register_elementwise_ops();
  register_linalg_ops();
  register_reduce_ops();
  register_identity_ops();
  register_movement_ops();
  register_nn_ops();
  register_random_ops();
  register_loss_ops();
  register_user_function_ops();
  register_norm_ops();
  register_sequence_delay_ops();
  register_sequence_ops();
  register_sequence_criterion_ops();
  register_conv_ops();
  register_rnn_stack_ops();
  register_lattice_ops();
}

}  // namespace cntk

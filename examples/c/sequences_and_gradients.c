/* Sequences, sparse data and gradients through OpenCNTK's C API (include/cntk/c_api.h):
 *
 *   x: one-hot words (sparse, 6 classes) in sequences; E: (6, 4) embedding; h = tanh(x @ E + past_value(h) @ R)
 *   loss = reduce_sum(h) over the static axis, per step
 *
 * The recurrence is built with a placeholder closed by cntk_function_replace_placeholders. The
 * program runs forward (keeping state) and backward over a batch of two sequences of different
 * lengths given as one-hot indices, checks dloss/dE and dloss/dR against central finite differences
 * of the summed loss, checks that the padded step is not in the unpacked output, round-trips the
 * model through bytes, clones it with shared parameters, and trains it a few steps with momentum SGD
 * and a checkpoint save/restore. Exits non-zero on any mismatch (ctest example_c_sequences_and_gradients).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cntk/c_api.h"
#include "keep_model.h"

#define CHECK(call)                                                                                          \
  do {                                                                                                       \
    cntk_status s_ = (call);                                                                                 \
    if (s_ != CNTK_OK) {                                                                                     \
      fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__, #call, (int)s_, cntk_last_error()); \
      exit(1);                                                                                               \
    }                                                                                                        \
  } while (0)

enum { kVocab = 6, kDim = 4 };

static cntk_variable* output_of(cntk_function* f) {
  cntk_variable* v;
  size_t n;
  CHECK(cntk_function_variables(f, 1, &v, 1, &n));
  return v;
}

static cntk_function* op2(const char* name, cntk_variable* a, cntk_variable* b, cntk_dict* attrs) {
  const cntk_variable* in[] = {a, b};
  cntk_function* f;
  CHECK(cntk_function_primitive(name, in, b ? 2 : 1, attrs, "", &f));
  return f;
}

/* The summed loss over all valid steps for the current parameter values. */
static double total_loss(cntk_function* loss, cntk_variable* x, cntk_value* data) {
  cntk_variable* out = output_of(loss);
  const cntk_variable* args[] = {x};
  const cntk_value* vals[] = {data};
  const cntk_variable* outs[] = {out};
  cntk_value* result;
  CHECK(cntk_function_evaluate(loss, args, vals, 1, outs, 1, &result));
  size_t n, total;
  CHECK(cntk_value_unpack(result, out, CNTK_DTYPE_DOUBLE, NULL, 0, &n, NULL, 0, &total));
  double* v = malloc(total * sizeof(double));
  CHECK(cntk_value_unpack(result, out, CNTK_DTYPE_DOUBLE, NULL, 0, &n, v, total, &total));
  double sum = 0;
  for (size_t i = 0; i < total; ++i) sum += v[i];
  free(v);
  cntk_value_release(result);
  cntk_variable_release(out);
  return sum;
}

/* Compares the gradient of parameter `p` (`grad`, row-major) with central differences. */
static int check_gradient(const char* name, cntk_variable* p, const double* grad, size_t count, cntk_function* loss,
                          cntk_variable* x, cntk_value* data) {
  cntk_ndarray* value;
  CHECK(cntk_variable_value(p, &value));
  double* w = malloc(count * sizeof(double));
  CHECK(cntk_ndarray_copy_to(value, CNTK_DTYPE_DOUBLE, w, count));
  double worst = 0;
  for (size_t i = 0; i < count; ++i) {
    const double eps = 1e-5, saved = w[i];
    w[i] = saved + eps;
    CHECK(cntk_ndarray_copy_from(value, CNTK_DTYPE_DOUBLE, w, count));
    CHECK(cntk_variable_set_value(p, value));
    double up = total_loss(loss, x, data);
    w[i] = saved - eps;
    CHECK(cntk_ndarray_copy_from(value, CNTK_DTYPE_DOUBLE, w, count));
    CHECK(cntk_variable_set_value(p, value));
    double down = total_loss(loss, x, data);
    w[i] = saved;
    double numeric = (up - down) / (2 * eps), err = fabs(numeric - grad[i]);
    if (err > worst) worst = err;
  }
  CHECK(cntk_ndarray_copy_from(value, CNTK_DTYPE_DOUBLE, w, count));
  CHECK(cntk_variable_set_value(p, value));
  cntk_ndarray_release(value);
  free(w);
  printf("d loss / d %s: largest difference from finite differences %.2e\n", name, worst);
  return worst < 1e-6;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : ".";
  int ok = 1;

  /* x: sparse one-hot words with a sequence axis (batch axis first, then the sequence axis). */
  cntk_axis *batch, *seq;
  CHECK(cntk_axis_default_batch(&batch));
  CHECK(cntk_axis_default_dynamic(&seq));
  const cntk_axis* axes[] = {batch, seq};
  const int64_t xdims[] = {kVocab}, edims[] = {kVocab, kDim}, rdims[] = {kDim, kDim}, hdims[] = {kDim};
  cntk_variable *x, *E, *R, *h_prev;
  CHECK(cntk_variable_input(xdims, 1, CNTK_DTYPE_DOUBLE, 1, 0, axes, 2, "x", &x));
  cntk_dict* init;
  CHECK(cntk_dict_create(&init));
  CHECK(cntk_dict_set_string(init, "type", "uniform"));
  CHECK(cntk_dict_set_double(init, "scale", 0.5));
  CHECK(cntk_dict_set_int(init, "randomSeed", 3));
  CHECK(cntk_variable_parameter_init(edims, 2, CNTK_DTYPE_DOUBLE, init, "E", &E));
  CHECK(cntk_variable_parameter_init(rdims, 2, CNTK_DTYPE_DOUBLE, init, "R", &R));
  cntk_dict_release(init);
  CHECK(cntk_variable_placeholder(hdims, 1, axes, 2, "h_prev", &h_prev));

  /* h = tanh(x @ E + past_value(h) @ R), closed through the placeholder. */
  cntk_variable* zero;
  CHECK(cntk_variable_constant_filled(NULL, 0, CNTK_DTYPE_DOUBLE, 0.0, "", &zero));
  cntk_dict* delay;
  CHECK(cntk_dict_create(&delay));
  CHECK(cntk_dict_set_int(delay, "offset", 1));
  cntk_function* past = op2("PastValue", h_prev, zero, delay);
  cntk_dict_release(delay);
  cntk_variable* past_out = output_of(past);
  cntk_function* xe = op2("Times", x, E, NULL);
  cntk_function* hr = op2("Times", past_out, R, NULL);
  cntk_variable *xe_out = output_of(xe), *hr_out = output_of(hr);
  cntk_function* pre = op2("Plus", xe_out, hr_out, NULL);
  cntk_variable* pre_out = output_of(pre);
  cntk_function* h = op2("Tanh", pre_out, NULL, NULL);
  cntk_variable* h_out = output_of(h);
  const cntk_variable* from[] = {h_prev};
  const cntk_variable* to[] = {h_out};
  cntk_function* closed;
  CHECK(cntk_function_replace_placeholders(h, from, to, 1, &closed));
  cntk_dict* sum;
  CHECK(cntk_dict_create(&sum));
  cntk_axis* all_static;
  CHECK(cntk_axis_all_static(&all_static));
  CHECK(cntk_dict_set_string(sum, "reductionOpName", "Sum"));
  CHECK(cntk_dict_set_axis(sum, "axis", all_static));
  CHECK(cntk_dict_set_bool(sum, "reductionKeepDimensions", 1));
  cntk_function* loss = op2("ReduceElements", h_out, NULL, sum);
  cntk_dict_release(sum);

  /* Two sequences of different lengths as one-hot indices. */
  const int64_t indices[] = {1, 4, 2, 5, 3, 0, 0};
  const int64_t lengths[] = {4, 3};
  cntk_value* data;
  CHECK(cntk_value_create_one_hot(CNTK_DTYPE_DOUBLE, kVocab, indices, lengths, 2, NULL, 1, &data));
  int sparse;
  CHECK(cntk_value_is_sparse(data, &sparse));
  ok &= sparse == 1;

  /* Forward keeping state, then backward from ones at every step of the loss. */
  cntk_variable* loss_out = output_of(loss);
  const cntk_variable* args[] = {x};
  const cntk_value* vals[] = {data};
  const cntk_variable* outs[] = {loss_out};
  cntk_value* loss_value;
  cntk_backprop_state* state;
  CHECK(cntk_function_forward(loss, args, vals, 1, outs, 1, &loss_value, &state));
  int64_t seq_lengths[2];
  size_t nseq, total;
  CHECK(cntk_value_unpack(loss_value, loss_out, CNTK_DTYPE_DOUBLE, seq_lengths, 2, &nseq, NULL, 0, &total));
  printf("loss per step: %zu sequences of %lld and %lld steps\n", nseq, (long long)seq_lengths[0],
         (long long)seq_lengths[1]);
  ok &= nseq == 2 && seq_lengths[0] == 4 && seq_lengths[1] == 3 && total == 7;

  const int64_t seed_dims[] = {2, 4, 1};
  cntk_ndarray* ones;
  CHECK(cntk_ndarray_create_filled(CNTK_DTYPE_DOUBLE, seed_dims, 3, 1.0, &ones));
  cntk_value* seed;
  CHECK(cntk_value_create_batch(ones, &seed));
  const cntk_variable* roots[] = {loss_out};
  const cntk_value* root_values[] = {seed};
  const cntk_variable* wrt[] = {E, R};
  cntk_value* grads[2];
  CHECK(cntk_function_backward(state, roots, root_values, 1, wrt, 2, grads));
  double gE[kVocab * kDim], gR[kDim * kDim];
  cntk_ndarray* g;
  CHECK(cntk_value_data(grads[0], &g));
  CHECK(cntk_ndarray_copy_to(g, CNTK_DTYPE_DOUBLE, gE, kVocab * kDim));
  cntk_ndarray_release(g);
  CHECK(cntk_value_data(grads[1], &g));
  CHECK(cntk_ndarray_copy_to(g, CNTK_DTYPE_DOUBLE, gR, kDim * kDim));
  cntk_ndarray_release(g);
  ok &= check_gradient("E", E, gE, kVocab * kDim, loss, x, data);
  ok &= check_gradient("R", R, gR, kDim * kDim, loss, x, data);

  /* Bytes round-trip and a clone that shares the parameters compute the same loss. */
  const double reference = total_loss(loss, x, data);
  size_t nbytes;
  CHECK(cntk_function_save_bytes(loss, NULL, 0, &nbytes));
  char* bytes = malloc(nbytes);
  CHECK(cntk_function_save_bytes(loss, bytes, nbytes, &nbytes));
  cntk_function* reloaded;
  CHECK(cntk_function_load_bytes(bytes, nbytes, &reloaded));
  free(bytes);
  cntk_variable* reloaded_x;
  size_t count;
  CHECK(cntk_function_variables(reloaded, 2, &reloaded_x, 1, &count));
  const double after_reload = total_loss(reloaded, reloaded_x, data);
  cntk_function* shared;
  CHECK(cntk_function_clone(loss, CNTK_CLONE_SHARE, NULL, NULL, 0, &shared));
  cntk_variable* shared_x;
  CHECK(cntk_function_variables(shared, 2, &shared_x, 1, &count));
  const double after_clone = total_loss(shared, shared_x, data);
  printf("summed loss %.9f, reloaded %.9f, shared clone %.9f\n", reference, after_reload, after_clone);
  ok &= fabs(reference - after_reload) < 1e-12 && fabs(reference - after_clone) < 1e-12;

  /* Momentum SGD lowers the loss; a checkpoint restores the parameters it saved. */
  cntk_variable* params[2];
  CHECK(cntk_function_variables(loss, 3, params, 2, &count));
  double lr = 0.05, momentum_tc = 100;
  cntk_schedule *lr_s, *mom_s;
  CHECK(cntk_schedule_create(&lr, NULL, 1, 0, 1, &lr_s));
  CHECK(cntk_schedule_momentum_as_time_constant(&momentum_tc, NULL, 1, 0, &mom_s));
  cntk_learner* learner;
  CHECK(cntk_learner_create("momentum_sgd", (const cntk_variable* const*)params, 2, lr_s, mom_s, NULL, NULL, NULL,
                            &learner));
  cntk_trainer* trainer;
  CHECK(cntk_trainer_create(NULL, loss, NULL, (const cntk_learner* const*)&learner, 1, &trainer));
  char ckp[1024];
  snprintf(ckp, sizeof ckp, "%s/c_api_sequences.ckp", dir);
  CHECK(cntk_trainer_save_checkpoint(trainer, ckp));
  for (int i = 0; i < 20; ++i) CHECK(cntk_trainer_train_minibatch(trainer, args, vals, 1, 0, NULL));
  double last;
  size_t samples;
  CHECK(cntk_trainer_previous_minibatch_loss_average(trainer, &last));
  CHECK(cntk_trainer_previous_minibatch_sample_count(trainer, &samples));
  const double trained = total_loss(loss, x, data);
  CHECK(keep_model(loss, "c_sequences_and_gradients"));
  CHECK(cntk_trainer_restore_checkpoint(trainer, ckp));
  const double restored = total_loss(loss, x, data);
  printf("after 20 steps: summed loss %.4f (%zu samples per minibatch); restored checkpoint %.9f\n", trained, samples,
         restored);
  ok &= samples == 7 && trained < reference - 1.0 && fabs(restored - reference) < 1e-12;
  remove(ckp);
  char ckp2[1100];
  snprintf(ckp2, sizeof ckp2, "%s.ckp", ckp);
  remove(ckp2);

  cntk_trainer_release(trainer);
  cntk_learner_release(learner);
  cntk_schedule_release(lr_s);
  cntk_schedule_release(mom_s);
  cntk_variable_release(params[0]);
  cntk_variable_release(params[1]);
  cntk_variable_release(shared_x);
  cntk_function_release(shared);
  cntk_variable_release(reloaded_x);
  cntk_function_release(reloaded);
  cntk_value_release(grads[0]);
  cntk_value_release(grads[1]);
  cntk_value_release(seed);
  cntk_ndarray_release(ones);
  cntk_backprop_state_release(state);
  cntk_value_release(loss_value);
  cntk_variable_release(loss_out);
  cntk_value_release(data);
  cntk_function_release(loss);
  cntk_axis_release(all_static);
  cntk_function_release(closed);
  cntk_variable_release(h_out);
  cntk_function_release(h);
  cntk_variable_release(pre_out);
  cntk_function_release(pre);
  cntk_variable_release(xe_out);
  cntk_variable_release(hr_out);
  cntk_function_release(xe);
  cntk_function_release(hr);
  cntk_variable_release(past_out);
  cntk_function_release(past);
  cntk_variable_release(zero);
  cntk_variable_release(h_prev);
  cntk_variable_release(x);
  cntk_variable_release(E);
  cntk_variable_release(R);
  cntk_axis_release(batch);
  cntk_axis_release(seq);
  return ok ? 0 : 1;
}

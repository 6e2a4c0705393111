/* Bad input to the C API (include/cntk/c_api.h) gives a status and a message, never a crash:
 * NULL handles and out pointers, indices past the end, wrong shapes and types, failing files,
 * and out parameters left untouched on failure. Registered as the ctest test c_api_errors (also
 * run by make sanitize). Prints each failed expectation and exits non-zero if there is one. */
#include <stdio.h>
#include <string.h>

#include "cntk/c_api.h"

static int failures = 0, checks = 0;

/* `call` must fail with `expected` (0: any failure) and leave a message. */
#define FAILS(expected, call)                                                                            \
  do {                                                                                                   \
    cntk_status s_ = (call);                                                                             \
    ++checks;                                                                                            \
    if (s_ == CNTK_OK || ((expected) != 0 && s_ != (expected)) || cntk_last_error()[0] == '\0') {        \
      fprintf(stderr, "line %d: %s returned %d (expected %d), message '%s'\n", __LINE__, #call, (int)s_, \
              (int)(expected), cntk_last_error());                                                       \
      ++failures;                                                                                        \
    }                                                                                                    \
  } while (0)

#define OK(call)                                                                                     \
  do {                                                                                               \
    cntk_status s_ = (call);                                                                         \
    if (s_ != CNTK_OK) {                                                                             \
      fprintf(stderr, "line %d: %s failed (%d): %s\n", __LINE__, #call, (int)s_, cntk_last_error()); \
      return 1;                                                                                      \
    }                                                                                                \
  } while (0)

int main(int argc, char** argv) {
  const cntk_status N = CNTK_NULL_ARGUMENT, V = CNTK_VALUE_ERROR;
  const int64_t dims3[] = {3}, dims2x3[] = {2, 3};
  cntk_ndarray* a = NULL;
  cntk_value* v = NULL;
  cntk_variable* var = NULL;
  cntk_function* f = NULL;
  cntk_axis* ax = NULL;
  cntk_dict* d = NULL;
  cntk_schedule* sch = NULL;
  cntk_learner* l = NULL;
  cntk_trainer* t = NULL;
  cntk_minibatch_source* src = NULL;
  cntk_minibatch* mb = NULL;
  int flag;
  size_t n;
  double x;
  char buf[64];

  /* NULL handles and out pointers. */
  FAILS(N, cntk_ndarray_create_dense(CNTK_DTYPE_FLOAT, dims3, 1, NULL, NULL));
  FAILS(N, cntk_ndarray_create_dense(CNTK_DTYPE_FLOAT, NULL, 1, NULL, &a));
  FAILS(N, cntk_ndarray_shape(NULL, NULL, 0, &n));
  FAILS(N, cntk_ndarray_copy_to(NULL, CNTK_DTYPE_FLOAT, buf, 1));
  FAILS(N, cntk_value_create_batch(NULL, &v));
  FAILS(N, cntk_value_data(NULL, &a));
  FAILS(N, cntk_value_unpack(NULL, NULL, CNTK_DTYPE_FLOAT, NULL, 0, &n, NULL, 0, &n));
  FAILS(N, cntk_variable_input(dims3, 1, CNTK_DTYPE_FLOAT, 0, 0, NULL, 0, "x", NULL));
  FAILS(N, cntk_variable_shape(NULL, NULL, 0, &n));
  FAILS(N, cntk_variable_name(NULL, buf, sizeof buf, &n));
  FAILS(N, cntk_variable_owner(NULL, &f));
  FAILS(N, cntk_variable_equal(NULL, NULL, &flag));
  FAILS(N, cntk_variable_parameter(NULL, "p", &var));
  FAILS(N, cntk_function_primitive(NULL, NULL, 0, NULL, "", &f));
  FAILS(N, cntk_function_variables(NULL, 1, NULL, 0, &n));
  FAILS(N, cntk_function_evaluate(NULL, NULL, NULL, 0, NULL, 0, NULL));
  FAILS(N, cntk_function_backward(NULL, NULL, NULL, 0, NULL, 0, NULL));
  FAILS(N, cntk_function_save(NULL, "x.model"));
  FAILS(N, cntk_function_load(NULL, &f));
  FAILS(N, cntk_function_find_by_name(NULL, "z", 0, &f));
  FAILS(N, cntk_function_clone(NULL, CNTK_CLONE, NULL, NULL, 0, &f));
  FAILS(N, cntk_axis_name(NULL, buf, sizeof buf, &n));
  FAILS(N, cntk_dict_set_int(NULL, "k", 1));
  FAILS(N, cntk_schedule_value_at(NULL, 0, &x));
  FAILS(N, cntk_learner_create("sgd", NULL, 0, NULL, NULL, NULL, NULL, NULL, &l));
  FAILS(N, cntk_trainer_create(NULL, NULL, NULL, NULL, 0, &t));
  FAILS(N, cntk_trainer_train_minibatch(NULL, NULL, NULL, 0, 0, &flag));
  FAILS(N, cntk_trainer_previous_minibatch_loss_average(NULL, &x));
  FAILS(N, cntk_minibatch_source_ctf(NULL, NULL, 0, CNTK_INFINITELY_REPEAT, 1, 1, 0, &src));
  FAILS(N, cntk_minibatch_source_next(NULL, 10, 1, 0, &mb));
  FAILS(N, cntk_minibatch_stream(NULL, 0, &v, NULL, NULL, NULL));
  /* Releasing NULL is allowed. */
  cntk_ndarray_release(NULL);
  cntk_value_release(NULL);
  cntk_variable_release(NULL);
  cntk_function_release(NULL);
  cntk_trainer_release(NULL);
  cntk_minibatch_source_release(NULL);

  /* Wrong types, shapes, kinds and values; out parameters stay as they were. */
  FAILS(CNTK_TYPE_ERROR, cntk_ndarray_create_dense((cntk_dtype)7, dims3, 1, NULL, &a));
  OK(cntk_ndarray_create_dense(CNTK_DTYPE_FLOAT, dims2x3, 2, NULL, &a));
  float small[2];
  FAILS(V, cntk_ndarray_copy_to(a, CNTK_DTYPE_FLOAT, small, 2));
  FAILS(V, cntk_ndarray_copy_from(a, CNTK_DTYPE_FLOAT, small, 2));
  const int64_t starts[] = {0, 1, 2}, bad_cols[] = {0, 9};
  const float vals[] = {1, 1};
  cntk_ndarray* sparse = NULL;
  FAILS(V, cntk_ndarray_create_sparse(CNTK_DTYPE_FLOAT, dims2x3, 2, starts, bad_cols, vals, 2, &sparse));
  if (sparse) ++failures;
  const int64_t one_hot[] = {7}, lengths[] = {1};
  FAILS(V, cntk_value_create_one_hot(CNTK_DTYPE_FLOAT, 4, one_hot, lengths, 1, NULL, 1, &v));
  if (v) ++failures;
  OK(cntk_variable_input(dims3, 1, CNTK_DTYPE_FLOAT, 0, 0, NULL, 0, "x", &var));
  FAILS(V, cntk_variable_value(var, &a));
  FAILS(V, cntk_variable_set_value(var, a));
  const cntk_variable* in[] = {var, var};
  FAILS(CNTK_NOT_IMPLEMENTED, cntk_function_primitive("NoSuchOp", in, 2, NULL, "", &f));
  OK(cntk_function_primitive("Plus", in, 2, NULL, "sum", &f));
  FAILS(V, cntk_function_variables(f, 42, NULL, 0, &n));
  FAILS(V, cntk_function_clone(f, (cntk_clone_method)9, NULL, NULL, 0, &f));
  OK(cntk_value_create_batch(a, &v)); /* (2, 3): a batch of two samples of 3 */
  cntk_variable* out;
  OK(cntk_function_variables(f, 1, &out, 1, &n));
  const cntk_variable* args[] = {out};
  const cntk_value* vals_in[] = {v};
  cntk_value* result = NULL;
  FAILS(V, cntk_function_evaluate(f, args, vals_in, 1, args, 1, &result)); /* an output is no argument */
  if (result) ++failures;
  FAILS(CNTK_IO_ERROR, cntk_function_load("/nonexistent/dir/model", &f));
  FAILS(CNTK_IO_ERROR, cntk_function_save(f, "/nonexistent/dir/model"));
  FAILS(CNTK_IO_ERROR, cntk_function_load_bytes("not a model", 11, &f));
  FAILS(V, cntk_schedule_create(NULL, NULL, 0, 0, 0, &sch));
  double lr = 0.1;
  OK(cntk_schedule_create(&lr, NULL, 1, 0, 0, &sch));
  cntk_variable* params[1];
  OK(cntk_function_variables(f, 3, params, 1, &n)); /* no parameters: n == 0 */
  FAILS(V, cntk_learner_create("no_such_learner", NULL, 0, sch, NULL, NULL, NULL, NULL, &l));
  FAILS(N, cntk_learner_create("momentum_sgd", NULL, 0, sch, NULL, NULL, NULL, NULL, &l));
  cntk_learner_options opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = 4;
  FAILS(V, cntk_learner_create("sgd", NULL, 0, sch, NULL, NULL, NULL, &opts, &l));
  cntk_stream_config streams[] = {{"features", NULL, 3, 0}};
  FAILS(CNTK_IO_ERROR,
        cntk_minibatch_source_ctf("/nonexistent.ctf", streams, 1, CNTK_INFINITELY_REPEAT, 1, 1, 0, &src));
  FAILS(V, cntk_minibatch_source_ctf("/nonexistent.ctf", streams, 0, CNTK_INFINITELY_REPEAT, 1, 1, 0, &src));
  FAILS(V, cntk_device_check(CNTK_DEVICE_GPU, 0));
  if (src || l || t) ++failures;

  /* Indices past the end of a source's and a minibatch's streams; bad minibatch requests. */
  char path[1024];
  snprintf(path, sizeof path, "%s/c_api_errors.ctf", argc > 1 ? argv[1] : ".");
  FILE* file = fopen(path, "w");
  if (!file) return 1;
  fputs("|features 1 2 3\n|features 4 5 6\n", file);
  fclose(file);
  OK(cntk_minibatch_source_ctf(path, streams, 1, CNTK_INFINITELY_REPEAT, 0, 1, 0, &src));
  cntk_dtype dtype;
  size_t dim;
  FAILS(CNTK_OUT_OF_RANGE, cntk_minibatch_source_stream(src, 5, buf, sizeof buf, &n, &dtype, &dim, &flag));
  FAILS(V, cntk_minibatch_source_next(src, 0, 1, 0, &mb));
  FAILS(V, cntk_minibatch_source_next(src, 2, 2, 2, &mb));
  OK(cntk_minibatch_source_next(src, 2, 1, 0, &mb));
  FAILS(CNTK_OUT_OF_RANGE, cntk_minibatch_stream(mb, 5, NULL, NULL, NULL, NULL));
  const size_t bad_stream[] = {3};
  cntk_ndarray *mean = NULL, *inv = NULL;
  FAILS(CNTK_OUT_OF_RANGE, cntk_minibatch_source_mean_inv_stddev(src, bad_stream, 1, &mean, &inv));
  if (mean || inv) ++failures;
  cntk_minibatch_release(mb);
  cntk_minibatch_source_release(src);
  remove(path);

  /* A successful call after failures: the last error stays readable, the status says OK. */
  OK(cntk_axis_default_batch(&ax));
  OK(cntk_axis_name(ax, buf, sizeof buf, &n));
  if (strcmp(buf, "defaultBatchAxis") != 0) ++failures;
  OK(cntk_dict_create(&d));
  FAILS(N, cntk_dict_set_string(d, "k", NULL));

  cntk_dict_release(d);
  cntk_axis_release(ax);
  cntk_schedule_release(sch);
  cntk_variable_release(out);
  cntk_value_release(v);
  cntk_function_release(f);
  cntk_variable_release(var);
  cntk_ndarray_release(a);
  printf("%d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}

/* Trains and evaluates a small classifier through OpenCNTK's C API (include/cntk/c_api.h):
 *
 *   features x: 2 numbers; labels y: one-hot over 3 classes
 *   z = x @ W + b, loss = cross_entropy_with_softmax(z, y), metric = classification_error(z, y)
 *
 * The data are three Gaussian blobs written to a CTF file and read back through a
 * MinibatchSource; an SGD learner and a Trainer fit the model. The program then saves the
 * model, loads it again, evaluates it on fresh samples held in memory, checks that bad calls
 * fail with a status and a message (never a crash), and exits non-zero when the held-out
 * error is above 10% or anything misbehaves. It runs as a ctest test (example_c_train_and_evaluate).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

enum { kFeatures = 2, kClasses = 3, kTrain = 3000, kTest = 600, kMinibatch = 30 };

static const float kCenters[kClasses][kFeatures] = {{-2.0f, 0.0f}, {2.0f, 0.0f}, {0.0f, 2.5f}};

/* A small linear congruential generator keeps the data the same on every platform. */
static unsigned long long rng_state = 20251125ULL;
static double uniform01(void) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}
static double gaussian(void) { return sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01()); }

static void sample(float* x, int* label) {
  *label = (int)(uniform01() * kClasses) % kClasses;
  for (int k = 0; k < kFeatures; ++k) x[k] = kCenters[*label][k] + (float)(0.8 * gaussian());
}

static void write_ctf(const char* path) {
  FILE* f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  for (int i = 0; i < kTrain; ++i) {
    float x[kFeatures];
    int label;
    sample(x, &label);
    fprintf(f, "|features %g %g |labels", x[0], x[1]);
    for (int c = 0; c < kClasses; ++c) fprintf(f, " %d", c == label);
    fprintf(f, "\n");
  }
  fclose(f);
}

/* Returns 1 when `status` is the expected failure and the message is not empty. */
static int fails_with(cntk_status status, cntk_status expected, const char* what) {
  if (status != expected || cntk_last_error()[0] == '\0') {
    fprintf(stderr, "%s: expected status %d with a message, got %d (%s)\n", what, (int)expected, (int)status,
            cntk_last_error());
    return 0;
  }
  printf("as expected, %s fails: %s\n", what, cntk_last_error());
  return 1;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : ".";
  char data_path[1024], model_path[1024];
  snprintf(data_path, sizeof data_path, "%s/c_api_blobs.ctf", dir);
  snprintf(model_path, sizeof model_path, "%s/c_api_model.cntk", dir);
  if (cntk_api_version() != CNTK_C_API_VERSION) {
    fprintf(stderr, "header version %d, library version %d\n", CNTK_C_API_VERSION, cntk_api_version());
    return 1;
  }
  write_ctf(data_path);

  /* The model. */
  const int64_t xdims[] = {kFeatures}, ydims[] = {kClasses}, wdims[] = {kFeatures, kClasses};
  cntk_variable *x, *y, *W, *b;
  CHECK(cntk_variable_input(xdims, 1, CNTK_DTYPE_FLOAT, 0, 0, NULL, 0, "features", &x));
  CHECK(cntk_variable_input(ydims, 1, CNTK_DTYPE_FLOAT, 0, 0, NULL, 0, "labels", &y));
  cntk_dict* init;
  CHECK(cntk_dict_create(&init));
  CHECK(cntk_dict_set_string(init, "type", "glorot_uniform"));
  CHECK(cntk_dict_set_double(init, "scale", 1.0));
  CHECK(cntk_dict_set_int(init, "randomSeed", 1));
  CHECK(cntk_variable_parameter_init(wdims, 2, CNTK_DTYPE_FLOAT, init, "W", &W));
  cntk_dict_release(init);
  cntk_ndarray* zeros;
  CHECK(cntk_ndarray_create_filled(CNTK_DTYPE_FLOAT, ydims, 1, 0.0, &zeros));
  CHECK(cntk_variable_parameter(zeros, "b", &b));
  cntk_ndarray_release(zeros);

  cntk_function *xw, *z, *loss, *error;
  const cntk_variable* times_in[] = {x, W};
  CHECK(cntk_function_primitive("Times", times_in, 2, NULL, "", &xw));
  cntk_variable** outs = NULL;
  cntk_variable* xw_out;
  size_t count;
  CHECK(cntk_function_variables(xw, 1, &xw_out, 1, &count));
  const cntk_variable* plus_in[] = {xw_out, b};
  CHECK(cntk_function_primitive("Plus", plus_in, 2, NULL, "z", &z));
  cntk_variable* z_out;
  CHECK(cntk_function_variables(z, 1, &z_out, 1, &count));
  const cntk_variable* ce_in[] = {z_out, y};
  CHECK(cntk_function_primitive("CrossEntropyWithSoftmax", ce_in, 2, NULL, "loss", &loss));
  CHECK(cntk_function_primitive("ClassificationError", ce_in, 2, NULL, "error", &error));
  (void)outs;

  /* Training: plain SGD, 0.1 per sample, 5 sweeps of a randomized CTF source. */
  cntk_variable* params[2];
  CHECK(cntk_function_variables(z, 3, params, 2, &count));
  if (count != 2) {
    fprintf(stderr, "expected 2 parameters, got %zu\n", count);
    return 1;
  }
  double lr_value = 0.1;
  cntk_schedule* lr;
  CHECK(cntk_schedule_create(&lr_value, NULL, 1, 0, 1, &lr));
  cntk_learner* learner;
  CHECK(cntk_learner_create("sgd", (const cntk_variable* const*)params, 2, lr, NULL, NULL, NULL, NULL, &learner));
  cntk_trainer* trainer;
  CHECK(cntk_trainer_create(z, loss, error, (const cntk_learner* const*)&learner, 1, &trainer));

  cntk_stream_config streams[] = {{"features", NULL, kFeatures, 0}, {"labels", NULL, kClasses, 0}};
  cntk_minibatch_source* source;
  CHECK(cntk_minibatch_source_ctf(data_path, streams, 2, 5 * (uint64_t)kTrain, 1, 1, 0, &source));
  int minibatches = 0;
  for (;;) {
    cntk_minibatch* mb;
    CHECK(cntk_minibatch_source_next(source, kMinibatch, 1, 0, &mb));
    if (!mb) break;
    cntk_value *fv, *lv;
    CHECK(cntk_minibatch_stream(mb, 0, &fv, NULL, NULL, NULL));
    CHECK(cntk_minibatch_stream(mb, 1, &lv, NULL, NULL, NULL));
    const cntk_variable* args[] = {x, y};
    const cntk_value* vals[] = {fv, lv};
    CHECK(cntk_trainer_train_minibatch(trainer, args, vals, 2, 0, NULL));
    if (minibatches % 100 == 0) {
      double l, e;
      CHECK(cntk_trainer_previous_minibatch_loss_average(trainer, &l));
      CHECK(cntk_trainer_previous_minibatch_evaluation_average(trainer, &e));
      printf("minibatch %4d: loss %.4f, error %.4f\n", minibatches, l, e);
    }
    cntk_value_release(fv);
    cntk_value_release(lv);
    cntk_minibatch_release(mb);
    ++minibatches;
  }
  size_t seen;
  CHECK(cntk_trainer_total_samples_seen(trainer, &seen));
  printf("trained on %zu samples in %d minibatches\n", seen, minibatches);
  if (seen != 5 * (size_t)kTrain) {
    fprintf(stderr, "expected %d samples\n", 5 * kTrain);
    return 1;
  }

  /* Save, load, find the output by name, evaluate on held-out samples. */
  CHECK(cntk_function_save(z, model_path));
  CHECK(keep_model(z, "c_train_and_evaluate"));
  cntk_function* loaded;
  CHECK(cntk_function_load(model_path, &loaded));
  remove(model_path);
  cntk_function* found;
  CHECK(cntk_function_find_by_name(loaded, "z", 0, &found));
  if (!found) {
    fprintf(stderr, "the loaded model has no function named z\n");
    return 1;
  }
  cntk_variable *arg, *out;
  CHECK(cntk_function_variables(loaded, 2, &arg, 1, &count));
  CHECK(cntk_function_variables(found, 1, &out, 1, &count));

  static float test_x[kTest * kFeatures];
  static int test_label[kTest];
  for (int i = 0; i < kTest; ++i) sample(test_x + i * kFeatures, test_label + i);
  const int64_t batch_dims[] = {kTest, kFeatures};
  cntk_ndarray* batch;
  CHECK(cntk_ndarray_create_dense(CNTK_DTYPE_FLOAT, batch_dims, 2, test_x, &batch));
  cntk_value* input;
  CHECK(cntk_value_create_batch(batch, &input));
  cntk_value* result;
  const cntk_variable* eval_args[] = {arg};
  const cntk_value* eval_vals[] = {input};
  const cntk_variable* eval_outs[] = {out};
  CHECK(cntk_function_evaluate(loaded, eval_args, eval_vals, 1, eval_outs, 1, &result));
  size_t num_sequences, total;
  CHECK(cntk_value_unpack(result, out, CNTK_DTYPE_FLOAT, NULL, 0, &num_sequences, NULL, 0, &total));
  float* scores = malloc(total * sizeof(float));
  CHECK(cntk_value_unpack(result, out, CNTK_DTYPE_FLOAT, NULL, 0, &num_sequences, scores, total, &total));
  int wrong = 0;
  for (int i = 0; i < kTest; ++i) {
    int best = 0;
    for (int c = 1; c < kClasses; ++c)
      if (scores[i * kClasses + c] > scores[i * kClasses + best]) best = c;
    wrong += best != test_label[i];
  }
  double test_error = (double)wrong / kTest;
  printf("held-out error: %.4f (%d of %d)\n", test_error, wrong, kTest);

  /* Bad calls fail with a status and a message. */
  int ok = 1;
  cntk_function* bad;
  ok &= fails_with(cntk_function_primitive("Times", NULL, 2, NULL, "", &bad), CNTK_NULL_ARGUMENT, "a NULL input list");
  const cntk_variable* mismatched[] = {x, y};
  ok &= fails_with(cntk_function_primitive("Plus", mismatched, 2, NULL, "", &bad), CNTK_VALUE_ERROR,
                   "Plus of shapes (2,) and (3,)");
  ok &= fails_with(cntk_function_primitive("NoSuchOp", mismatched, 2, NULL, "", &bad), CNTK_NOT_IMPLEMENTED,
                   "an unknown op");
  cntk_value* wrong_input;
  const int64_t wrong_dims[] = {4, kClasses};
  cntk_ndarray* wrong_batch;
  CHECK(cntk_ndarray_create_dense(CNTK_DTYPE_FLOAT, wrong_dims, 2, NULL, &wrong_batch));
  CHECK(cntk_value_create_batch(wrong_batch, &wrong_input));
  const cntk_value* wrong_vals[] = {wrong_input};
  cntk_value* never = NULL;
  ok &= fails_with(cntk_function_evaluate(loaded, eval_args, wrong_vals, 1, eval_outs, 1, &never), CNTK_VALUE_ERROR,
                   "evaluating with (4, 3) data for a (2,) input");
  ok &= never == NULL;
  ok &= fails_with(cntk_function_load("/nonexistent/model.cntk", &bad), CNTK_IO_ERROR, "loading a missing file");
  ok &= fails_with(cntk_device_check(CNTK_DEVICE_GPU, 0), CNTK_VALUE_ERROR, "asking for a GPU");
  ok &= fails_with(cntk_variable_value(x, &batch), CNTK_VALUE_ERROR, "the value of an input");
  cntk_ndarray_release(wrong_batch);
  cntk_value_release(wrong_input);

  free(scores);
  cntk_value_release(result);
  cntk_value_release(input);
  cntk_ndarray_release(batch);
  cntk_variable_release(arg);
  cntk_variable_release(out);
  cntk_function_release(found);
  cntk_function_release(loaded);
  cntk_minibatch_source_release(source);
  cntk_trainer_release(trainer);
  cntk_learner_release(learner);
  cntk_schedule_release(lr);
  cntk_variable_release(params[0]);
  cntk_variable_release(params[1]);
  cntk_variable_release(xw_out);
  cntk_variable_release(z_out);
  cntk_function_release(xw);
  cntk_function_release(z);
  cntk_function_release(loss);
  cntk_function_release(error);
  cntk_variable_release(x);
  cntk_variable_release(y);
  cntk_variable_release(W);
  cntk_variable_release(b);
  remove(data_path);
  if (!ok) return 1;
  if (test_error > 0.10) {
    fprintf(stderr, "held-out error %.4f is above 10%%\n", test_error);
    return 1;
  }
  return 0;
}

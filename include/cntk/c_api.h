/* OpenCNTK's C API: a flat, versioned C ABI over the C++ engine (the headers of include/cntk),
 * for languages that bind through a C FFI (the C# assembly in bindings/csharp uses it
 * through P/Invoke).
 *
 * Conventions
 * - Every object is an opaque handle created by a cntk_*_create/new/... call or returned
 *   through an out parameter, and freed with its cntk_*_release (NULL is accepted there).
 *   Handles are reference-counted views of engine objects: releasing a handle never frees
 *   something another handle still reaches (a variable keeps its function alive).
 * - Every call that can fail returns a cntk_status; on failure the out parameters are
 *   untouched and cntk_last_error() returns the message, kept per thread until the next
 *   failing call on that thread. No C++ exception crosses this boundary.
 * - Shapes are in the engine's order: NumPy order, row-major, last axis fastest. (CNTK's
 *   C++ and C# APIs list dimensions the other way round; the C# binding reverses them.)
 *   Dense data is row-major in that order, so a batch of samples is sample after sample.
 * - Lists come back through the two-call pattern: pass a NULL array (or a capacity too
 *   small) to learn the count, then call again with room for it.
 * - Strings passed in are UTF-8 and copied; strings passed out are written into caller
 *   buffers with the same two-call pattern (the length excludes the terminating zero).
 */
#ifndef CNTK_C_API_H
#define CNTK_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CNTK_C_EXPORT __declspec(dllexport)
#else
#define CNTK_C_EXPORT __attribute__((visibility("default")))
#endif

/* Bumped when a signature changes or a function is removed; additions keep it. */
#define CNTK_C_API_VERSION 1

/* The C# binding raises the exception CNTK 2.7's C# API raised for each: ArgumentOutOfRangeException
 * for value, type and range errors, ArgumentNullException for NULL, NotImplementedException, and
 * ApplicationException for I/O and other errors. */
typedef enum cntk_status {
  CNTK_OK = 0,
  CNTK_ERROR = 1,           /* any other engine error */
  CNTK_VALUE_ERROR = 2,     /* bad arguments, shapes or values */
  CNTK_TYPE_ERROR = 3,      /* wrong element type */
  CNTK_NOT_IMPLEMENTED = 4, /* a feature OpenCNTK does not have (the message says which) */
  CNTK_IO_ERROR = 5,        /* files: missing, unreadable, malformed */
  CNTK_NULL_ARGUMENT = 6,   /* a required handle or pointer was NULL */
  CNTK_OUT_OF_RANGE = 7     /* an index past the end of a list */
} cntk_status;

/* The *_MIN_ENUM / *_MAX_ENUM entries of the enums callers pass in make each enum as wide as int, so
 * that any int a caller passes is a value the library can check (and reject) rather than one C++
 * may not even read. They are not values to use. */
#define CNTK_ENUM_RANGE(prefix) prefix##_MIN_ENUM = -0x7fffffff - 1, prefix##_MAX_ENUM = 0x7fffffff

/* Element types: CNTK's DataType numbering. */
typedef enum cntk_dtype {
  CNTK_DTYPE_UNKNOWN = 0,
  CNTK_DTYPE_FLOAT = 1,
  CNTK_DTYPE_DOUBLE = 2,
  CNTK_ENUM_RANGE(CNTK_DTYPE)
} cntk_dtype;

typedef enum cntk_device_kind {
  CNTK_DEVICE_CPU = 0,
  CNTK_DEVICE_GPU = 1,
  CNTK_ENUM_RANGE(CNTK_DEVICE)
} cntk_device_kind;

typedef enum cntk_variable_kind {
  CNTK_VARIABLE_INPUT = 0,
  CNTK_VARIABLE_OUTPUT = 1,
  CNTK_VARIABLE_PARAMETER = 2,
  CNTK_VARIABLE_CONSTANT = 3,
  CNTK_VARIABLE_PLACEHOLDER = 4
} cntk_variable_kind;

typedef enum cntk_clone_method {
  CNTK_CLONE = 0,
  CNTK_CLONE_SHARE = 1,
  CNTK_CLONE_FREEZE = 2,
  CNTK_ENUM_RANGE(CNTK_CLONE_METHOD)
} cntk_clone_method;

typedef struct cntk_ndarray cntk_ndarray;   /* NDArrayView: a dense or sparse tensor */
typedef struct cntk_value cntk_value;       /* Value: a batch, or a batch of sequences with a mask */
typedef struct cntk_axis cntk_axis;         /* Axis: static, batch, sequence, all-static, all */
typedef struct cntk_variable cntk_variable; /* Variable: input, output, parameter, constant, placeholder */
typedef struct cntk_function cntk_function; /* Function: a (composite) graph */
typedef struct cntk_dict cntk_dict;         /* Dictionary: op attributes, initializer specs */
typedef struct cntk_backprop_state cntk_backprop_state;
typedef struct cntk_schedule cntk_schedule; /* TrainingParameterSchedule<double> */
typedef struct cntk_learner cntk_learner;
typedef struct cntk_trainer cntk_trainer;
typedef struct cntk_minibatch_source cntk_minibatch_source;
typedef struct cntk_minibatch cntk_minibatch; /* one minibatch: per stream data and counts */

/* ------------------------------------------------------------------ errors, version */

CNTK_C_EXPORT int cntk_api_version(void);
/* The message of the last failing call on this thread ("" if none). Valid until the next call. */
CNTK_C_EXPORT const char* cntk_last_error(void);
CNTK_C_EXPORT cntk_status cntk_last_status(void);

/* ------------------------------------------------------------------ devices, random */

/* Checks that the device exists (a GPU does not: CNTK_VALUE_ERROR with the reason). */
CNTK_C_EXPORT cntk_status cntk_device_check(cntk_device_kind kind, int id);
CNTK_C_EXPORT cntk_status cntk_device_default(cntk_device_kind* kind, int* id);
CNTK_C_EXPORT cntk_status cntk_set_fixed_random_seed(uint64_t seed);
/* The seed for a random op or initializer given none: the fixed seed, or the next one (CNTK's rule). */
CNTK_C_EXPORT cntk_status cntk_next_random_seed(uint64_t* out);

/* ------------------------------------------------------------------ NDArrayView */

/* A dense array holding a copy of `data` (row-major, `dtype` elements); NULL data: zeros. */
CNTK_C_EXPORT cntk_status cntk_ndarray_create_dense(cntk_dtype dtype, const int64_t* dims, size_t rank,
                                                    const void* data, cntk_ndarray** out);
CNTK_C_EXPORT cntk_status cntk_ndarray_create_filled(cntk_dtype dtype, const int64_t* dims, size_t rank, double value,
                                                     cntk_ndarray** out);
/* Sparse, in compressed rows over the last axis: the array read as (outer = product of the
 * leading dims) rows of dims[rank-1] columns; row_starts has outer + 1 entries. */
CNTK_C_EXPORT cntk_status cntk_ndarray_create_sparse(cntk_dtype dtype, const int64_t* dims, size_t rank,
                                                     const int64_t* row_starts, const int64_t* col_indices,
                                                     const void* values, size_t nnz, cntk_ndarray** out);
/* Uniform in [low, high) from the engine's uniform initializer with `seed`. */
CNTK_C_EXPORT cntk_status cntk_ndarray_random_uniform(cntk_dtype dtype, const int64_t* dims, size_t rank, double low,
                                                      double high, uint64_t seed, cntk_ndarray** out);
CNTK_C_EXPORT void cntk_ndarray_release(cntk_ndarray* a);
CNTK_C_EXPORT cntk_status cntk_ndarray_dtype(const cntk_ndarray* a, cntk_dtype* out);
CNTK_C_EXPORT cntk_status cntk_ndarray_shape(const cntk_ndarray* a, int64_t* dims, size_t capacity, size_t* rank);
CNTK_C_EXPORT cntk_status cntk_ndarray_is_sparse(const cntk_ndarray* a, int* out);
/* Copies the (densified) elements out, converted to `dtype`; `capacity` in elements. */
CNTK_C_EXPORT cntk_status cntk_ndarray_copy_to(const cntk_ndarray* a, cntk_dtype dtype, void* buffer, size_t capacity);
/* Overwrites the elements from `data` (same count, `dtype` elements, converted). */
CNTK_C_EXPORT cntk_status cntk_ndarray_copy_from(cntk_ndarray* a, cntk_dtype dtype, const void* data, size_t count);
CNTK_C_EXPORT cntk_status cntk_ndarray_deep_clone(const cntk_ndarray* a, cntk_ndarray** out);

/* ------------------------------------------------------------------ Value */

/* A batch: `data`'s first axis is the batch axis (no copy of the array's storage). */
CNTK_C_EXPORT cntk_status cntk_value_create_batch(const cntk_ndarray* data, cntk_value** out);
/* Sequences: `count` arrays [len_i, *sample_shape]; `starts[i]` nonzero when sequence i begins
 * there (NULL: all begin). With sequential == 0 every array must hold one sample and the result
 * is a plain batch. */
CNTK_C_EXPORT cntk_status cntk_value_create_sequences(const cntk_ndarray* const* sequences, const int* starts,
                                                      size_t count, int sequential, cntk_value** out);
/* One-hot sequences (or a batch when sequential == 0): `indices` holds the class indices of all
 * sequences one after another, `lengths[i]` of them for sequence i; -1 stands for an all-zero sample. */
CNTK_C_EXPORT cntk_status cntk_value_create_one_hot(cntk_dtype dtype, int64_t num_classes, const int64_t* indices,
                                                    const int64_t* lengths, size_t count, const int* starts,
                                                    int sequential, cntk_value** out);
CNTK_C_EXPORT void cntk_value_release(cntk_value* v);
CNTK_C_EXPORT cntk_status cntk_value_data(const cntk_value* v, cntk_ndarray** out);
CNTK_C_EXPORT cntk_status cntk_value_shape(const cntk_value* v, int64_t* dims, size_t capacity, size_t* rank);
CNTK_C_EXPORT cntk_status cntk_value_dtype(const cntk_value* v, cntk_dtype* out);
CNTK_C_EXPORT cntk_status cntk_value_is_sparse(const cntk_value* v, int* out);
CNTK_C_EXPORT cntk_status cntk_value_has_mask(const cntk_value* v, int* out);
/* Unpacks the value against a variable's layout (sample shape and dynamic axes): the number of
 * sequences (batch entries), each one's sample count, and all samples densified, one sequence
 * after another, as `dtype`. Pass NULL buffers to learn the sizes (`total` is in elements). */
CNTK_C_EXPORT cntk_status cntk_value_unpack(const cntk_value* v, const cntk_variable* layout, cntk_dtype dtype,
                                            int64_t* lengths, size_t lengths_capacity, size_t* num_sequences,
                                            void* buffer, size_t buffer_capacity, size_t* total);
/* A one-hot value's class indices per sample (-1 for an all-zero sample), laid out as cntk_value_unpack's. */
CNTK_C_EXPORT cntk_status cntk_value_unpack_one_hot(const cntk_value* v, const cntk_variable* layout, int64_t* lengths,
                                                    size_t lengths_capacity, size_t* num_sequences, int64_t* indices,
                                                    size_t indices_capacity, size_t* total);

/* ------------------------------------------------------------------ Axis */

CNTK_C_EXPORT cntk_status cntk_axis_static(int index, cntk_axis** out);
CNTK_C_EXPORT cntk_status cntk_axis_default_batch(cntk_axis** out);
CNTK_C_EXPORT cntk_status cntk_axis_default_dynamic(cntk_axis** out);
CNTK_C_EXPORT cntk_status cntk_axis_all_static(cntk_axis** out);
CNTK_C_EXPORT cntk_status cntk_axis_all(cntk_axis** out);
/* Stands for the sequence axis of whatever operand the op gets (sequence reductions, slices). */
CNTK_C_EXPORT cntk_status cntk_axis_operand_sequence(cntk_axis** out);
CNTK_C_EXPORT cntk_status cntk_axis_new_unique_dynamic(const char* name, int ordered, cntk_axis** out);
CNTK_C_EXPORT void cntk_axis_release(cntk_axis* a);
/* kind: 0 static, 1 dynamic, 2 all static axes, 3 all axes. */
CNTK_C_EXPORT cntk_status cntk_axis_info(const cntk_axis* a, int* kind, int* static_index, int* is_ordered);
CNTK_C_EXPORT cntk_status cntk_axis_name(const cntk_axis* a, char* buffer, size_t capacity, size_t* length);
CNTK_C_EXPORT cntk_status cntk_axis_equal(const cntk_axis* a, const cntk_axis* b, int* out);

/* ------------------------------------------------------------------ Dictionary (attributes) */

CNTK_C_EXPORT cntk_status cntk_dict_create(cntk_dict** out);
CNTK_C_EXPORT void cntk_dict_release(cntk_dict* d);
CNTK_C_EXPORT cntk_status cntk_dict_set_bool(cntk_dict* d, const char* key, int value);
CNTK_C_EXPORT cntk_status cntk_dict_set_int(cntk_dict* d, const char* key, int64_t value);
CNTK_C_EXPORT cntk_status cntk_dict_set_double(cntk_dict* d, const char* key, double value);
CNTK_C_EXPORT cntk_status cntk_dict_set_string(cntk_dict* d, const char* key, const char* value);
CNTK_C_EXPORT cntk_status cntk_dict_set_shape(cntk_dict* d, const char* key, const int64_t* dims, size_t rank);
CNTK_C_EXPORT cntk_status cntk_dict_set_axis(cntk_dict* d, const char* key, const cntk_axis* axis);
CNTK_C_EXPORT cntk_status cntk_dict_set_axes(cntk_dict* d, const char* key, const cntk_axis* const* axes, size_t count);
CNTK_C_EXPORT cntk_status cntk_dict_set_bools(cntk_dict* d, const char* key, const int* values, size_t count);
CNTK_C_EXPORT cntk_status cntk_dict_set_ints(cntk_dict* d, const char* key, const int64_t* values, size_t count);
CNTK_C_EXPORT cntk_status cntk_dict_set_ndarray(cntk_dict* d, const char* key, const cntk_ndarray* value);

/* ------------------------------------------------------------------ Variable */

/* dynamic_axes == NULL and num_axes == 0: the default (a batch axis). */
CNTK_C_EXPORT cntk_status cntk_variable_input(const int64_t* dims, size_t rank, cntk_dtype dtype, int is_sparse,
                                              int needs_gradient, const cntk_axis* const* dynamic_axes, size_t num_axes,
                                              const char* name, cntk_variable** out);
/* A parameter from an initial value (copied) ... */
CNTK_C_EXPORT cntk_status cntk_variable_parameter(const cntk_ndarray* value, const char* name, cntk_variable** out);
/* ... or from an initializer spec (keys type, scale, outputRank, filterRank, randomSeed, value)
 * applied once the shape is known. */
CNTK_C_EXPORT cntk_status cntk_variable_parameter_init(const int64_t* dims, size_t rank, cntk_dtype dtype,
                                                       const cntk_dict* init, const char* name, cntk_variable** out);
CNTK_C_EXPORT cntk_status cntk_variable_constant(const cntk_ndarray* value, const char* name, cntk_variable** out);
CNTK_C_EXPORT cntk_status cntk_variable_constant_filled(const int64_t* dims, size_t rank, cntk_dtype dtype,
                                                        double value, const char* name, cntk_variable** out);
CNTK_C_EXPORT cntk_status cntk_variable_placeholder(const int64_t* dims, size_t rank,
                                                    const cntk_axis* const* dynamic_axes, size_t num_axes,
                                                    const char* name, cntk_variable** out);
CNTK_C_EXPORT void cntk_variable_release(cntk_variable* v);
CNTK_C_EXPORT cntk_status cntk_variable_clone_handle(const cntk_variable* v, cntk_variable** out);
CNTK_C_EXPORT cntk_status cntk_variable_get_kind(const cntk_variable* v, cntk_variable_kind* out);
CNTK_C_EXPORT cntk_status cntk_variable_shape(const cntk_variable* v, int64_t* dims, size_t capacity, size_t* rank);
CNTK_C_EXPORT cntk_status cntk_variable_dtype(const cntk_variable* v, cntk_dtype* out);
CNTK_C_EXPORT cntk_status cntk_variable_is_sparse(const cntk_variable* v, int* out);
CNTK_C_EXPORT cntk_status cntk_variable_needs_gradient(const cntk_variable* v, int* out);
CNTK_C_EXPORT cntk_status cntk_variable_name(const cntk_variable* v, char* buffer, size_t capacity, size_t* length);
CNTK_C_EXPORT cntk_status cntk_variable_uid(const cntk_variable* v, char* buffer, size_t capacity, size_t* length);
CNTK_C_EXPORT cntk_status cntk_variable_dynamic_axes(const cntk_variable* v, cntk_axis** axes, size_t capacity,
                                                     size_t* count);
/* The function producing an output variable; *out is NULL for other kinds. */
CNTK_C_EXPORT cntk_status cntk_variable_owner(const cntk_variable* v, cntk_function** out);
/* A parameter's or constant's current value (a copy). */
CNTK_C_EXPORT cntk_status cntk_variable_value(const cntk_variable* v, cntk_ndarray** out);
CNTK_C_EXPORT cntk_status cntk_variable_set_value(cntk_variable* v, const cntk_ndarray* value);
/* Identity: two handles of the same variable are equal and hash alike. */
CNTK_C_EXPORT cntk_status cntk_variable_equal(const cntk_variable* a, const cntk_variable* b, int* out);
CNTK_C_EXPORT cntk_status cntk_variable_hash(const cntk_variable* v, uint64_t* out);

/* ------------------------------------------------------------------ Function */

/* One catalogue op by its CNTK name (Plus, Times, Convolution, ...) with CNTK's attribute keys;
 * returned as a composite. attributes may be NULL. */
CNTK_C_EXPORT cntk_status cntk_function_primitive(const char* op_name, const cntk_variable* const* inputs,
                                                  size_t num_inputs, const cntk_dict* attributes, const char* name,
                                                  cntk_function** out);
/* A block: `composite` with each of its placeholders bound from outside by `arguments` (pairs
 * placeholder, outer variable), shown as one op named `op_name`. */
CNTK_C_EXPORT cntk_status cntk_function_as_block(const cntk_function* composite,
                                                 const cntk_variable* const* placeholders,
                                                 const cntk_variable* const* arguments, size_t count,
                                                 const char* op_name, const char* name, cntk_function** out);
CNTK_C_EXPORT cntk_status cntk_function_combine(const cntk_variable* const* outputs, size_t count, const char* name,
                                                cntk_function** out);
CNTK_C_EXPORT cntk_status cntk_function_alias(const cntk_variable* operand, const char* name, cntk_function** out);
CNTK_C_EXPORT void cntk_function_release(cntk_function* f);
CNTK_C_EXPORT cntk_status cntk_function_clone_handle(const cntk_function* f, cntk_function** out);
CNTK_C_EXPORT cntk_status cntk_function_name(const cntk_function* f, char* buffer, size_t capacity, size_t* length);
CNTK_C_EXPORT cntk_status cntk_function_set_name(cntk_function* f, const char* name);
CNTK_C_EXPORT cntk_status cntk_function_uid(const cntk_function* f, char* buffer, size_t capacity, size_t* length);
CNTK_C_EXPORT cntk_status cntk_function_op_name(const cntk_function* f, char* buffer, size_t capacity, size_t* length);
/* 0 primitive, 1 composite, 2 block */
CNTK_C_EXPORT cntk_status cntk_function_kind(const cntk_function* f, int* out);
CNTK_C_EXPORT cntk_status cntk_function_root(const cntk_function* f, cntk_function** out);
/* Variable lists. which: 0 inputs, 1 outputs, 2 arguments, 3 parameters, 4 constants, 5 placeholders. */
CNTK_C_EXPORT cntk_status cntk_function_variables(const cntk_function* f, int which, cntk_variable** out,
                                                  size_t capacity, size_t* count);
/* The first function (depth-first) named `name`; *out is NULL when there is none. */
CNTK_C_EXPORT cntk_status cntk_function_find_by_name(const cntk_function* f, const char* name, int nested,
                                                     cntk_function** out);
CNTK_C_EXPORT cntk_status cntk_function_find_all_with_name(const cntk_function* f, const char* name, int nested,
                                                           cntk_function** out, size_t capacity, size_t* count);
/* A copy of the graph; `from`/`to` substitute variables (placeholders or inputs). */
CNTK_C_EXPORT cntk_status cntk_function_clone(const cntk_function* f, cntk_clone_method method,
                                              const cntk_variable* const* from, const cntk_variable* const* to,
                                              size_t count, cntk_function** out);
CNTK_C_EXPORT cntk_status cntk_function_replace_placeholders(cntk_function* f, const cntk_variable* const* placeholders,
                                                             const cntk_variable* const* values, size_t count,
                                                             cntk_function** out);
CNTK_C_EXPORT cntk_status cntk_function_equal(const cntk_function* a, const cntk_function* b, int* out);

/* Computes `outputs` from `arguments`; out_values[i] receives a new value handle. */
CNTK_C_EXPORT cntk_status cntk_function_evaluate(const cntk_function* f, const cntk_variable* const* arguments,
                                                 const cntk_value* const* argument_values, size_t num_arguments,
                                                 const cntk_variable* const* outputs, size_t num_outputs,
                                                 cntk_value** out_values);
/* As evaluate, in training mode, keeping what backward needs in *state. */
CNTK_C_EXPORT cntk_status cntk_function_forward(const cntk_function* f, const cntk_variable* const* arguments,
                                                const cntk_value* const* argument_values, size_t num_arguments,
                                                const cntk_variable* const* outputs, size_t num_outputs,
                                                cntk_value** out_values, cntk_backprop_state** state);
CNTK_C_EXPORT cntk_status cntk_function_backward(const cntk_backprop_state* state, const cntk_variable* const* roots,
                                                 const cntk_value* const* root_gradients, size_t num_roots,
                                                 const cntk_variable* const* wrt, size_t num_wrt,
                                                 cntk_value** out_gradients);
CNTK_C_EXPORT void cntk_backprop_state_release(cntk_backprop_state* s);

/* Model files: saved in CNTK's v2 format; loading also reads CNTK v1 model files (.dnn, .cmf). */
CNTK_C_EXPORT cntk_status cntk_function_save(const cntk_function* f, const char* path);
CNTK_C_EXPORT cntk_status cntk_function_load(const char* path, cntk_function** out);
CNTK_C_EXPORT cntk_status cntk_function_save_bytes(const cntk_function* f, char* buffer, size_t capacity,
                                                   size_t* length);
CNTK_C_EXPORT cntk_status cntk_function_load_bytes(const char* bytes, size_t length, cntk_function** out);
CNTK_C_EXPORT cntk_status cntk_function_restore(cntk_function* f, const char* path);

/* ------------------------------------------------------------------ schedules, learners */

/* values[i] holds for counts[i] epochs of epoch_size samples (epoch_size 0: sweeps); counts NULL:
 * one epoch each. minibatch_size is the reference size (0: as is, per minibatch). */
CNTK_C_EXPORT cntk_status cntk_schedule_create(const double* values, const size_t* counts, size_t count,
                                               size_t epoch_size, size_t minibatch_size, cntk_schedule** out);
CNTK_C_EXPORT cntk_status cntk_schedule_momentum_as_time_constant(const double* time_constants, const size_t* counts,
                                                                  size_t count, size_t epoch_size, cntk_schedule** out);
CNTK_C_EXPORT void cntk_schedule_release(cntk_schedule* s);
CNTK_C_EXPORT cntk_status cntk_schedule_value_at(const cntk_schedule* s, size_t count, double* out);
CNTK_C_EXPORT cntk_status cntk_schedule_info(const cntk_schedule* s, size_t* epoch_size, size_t* minibatch_size);

/* CNTK's AdditionalLearningOptions. Zero-initialize, then set what differs; struct_size must be
 * sizeof(cntk_learner_options) (fields are only ever added at the end). */
typedef struct cntk_learner_options {
  size_t struct_size;
  double l1_regularization_weight;
  double l2_regularization_weight;
  double gradient_clipping_threshold_per_sample; /* 0: none (infinity) */
  int gradient_clipping_with_truncation;
  int has_minibatch_size; /* nonzero: minibatch_size is the learner's reference size */
  size_t minibatch_size;
} cntk_learner_options;

/* kind: "sgd", "momentum_sgd", "nesterov", "adagrad", "adadelta", "fsadagrad", "adam", "adamax",
 * "rmsprop". momentum/variance_momentum may be NULL where the kind has none (defaults apply).
 * extra holds kind-specific numbers under CNTK's names (unitGain, epsilon, rho, gamma, inc, dec,
 * max, min, needAveMultiplier); NULL for the defaults. options may be NULL. */
CNTK_C_EXPORT cntk_status cntk_learner_create(const char* kind, const cntk_variable* const* parameters,
                                              size_t num_parameters, const cntk_schedule* learning_rate,
                                              const cntk_schedule* momentum, const cntk_schedule* variance_momentum,
                                              const cntk_dict* extra, const cntk_learner_options* options,
                                              cntk_learner** out);
CNTK_C_EXPORT void cntk_learner_release(cntk_learner* l);
CNTK_C_EXPORT cntk_status cntk_learner_learning_rate(const cntk_learner* l, double* out);
CNTK_C_EXPORT cntk_status cntk_learner_reset_learning_rate(cntk_learner* l, const cntk_schedule* s);
CNTK_C_EXPORT cntk_status cntk_learner_parameters(const cntk_learner* l, cntk_variable** out, size_t capacity,
                                                  size_t* count);
CNTK_C_EXPORT cntk_status cntk_learner_samples_seen(const cntk_learner* l, size_t* out);

/* ------------------------------------------------------------------ Trainer */

/* model and evaluation may be NULL. */
CNTK_C_EXPORT cntk_status cntk_trainer_create(const cntk_function* model, const cntk_function* loss,
                                              const cntk_function* evaluation, const cntk_learner* const* learners,
                                              size_t num_learners, cntk_trainer** out);
CNTK_C_EXPORT void cntk_trainer_release(cntk_trainer* t);
CNTK_C_EXPORT cntk_status cntk_trainer_train_minibatch(cntk_trainer* t, const cntk_variable* const* arguments,
                                                       const cntk_value* const* values, size_t count, int sweep_end,
                                                       int* updated);
CNTK_C_EXPORT cntk_status cntk_trainer_test_minibatch(cntk_trainer* t, const cntk_variable* const* arguments,
                                                      const cntk_value* const* values, size_t count, double* average);
CNTK_C_EXPORT cntk_status cntk_trainer_previous_minibatch_loss_average(const cntk_trainer* t, double* out);
CNTK_C_EXPORT cntk_status cntk_trainer_previous_minibatch_evaluation_average(const cntk_trainer* t, double* out);
CNTK_C_EXPORT cntk_status cntk_trainer_previous_minibatch_sample_count(const cntk_trainer* t, size_t* out);
CNTK_C_EXPORT cntk_status cntk_trainer_total_samples_seen(const cntk_trainer* t, size_t* out);
/* which: 0 model, 1 loss, 2 evaluation (*out NULL when absent). */
CNTK_C_EXPORT cntk_status cntk_trainer_function(const cntk_trainer* t, int which, cntk_function** out);
CNTK_C_EXPORT cntk_status cntk_trainer_save_checkpoint(const cntk_trainer* t, const char* path);
CNTK_C_EXPORT cntk_status cntk_trainer_restore_checkpoint(cntk_trainer* t, const char* path);

/* ------------------------------------------------------------------ MinibatchSource */

#define CNTK_INFINITELY_REPEAT UINT64_MAX
#define CNTK_FULL_DATA_SWEEP (UINT64_MAX - 2)

/* One stream of a CTF file: name in the source, alias in the file (NULL: the name), sample
 * dimension, sparse or dense. */
typedef struct cntk_stream_config {
  const char* name;
  const char* alias;
  size_t dim;
  int is_sparse;
} cntk_stream_config;

/* A CTF-file source (CNTK's TextFormatMinibatchSource). max_samples: CNTK_INFINITELY_REPEAT or
 * CNTK_FULL_DATA_SWEEP (one sweep) or a count. window: randomization window in chunks. */
CNTK_C_EXPORT cntk_status cntk_minibatch_source_ctf(const char* path, const cntk_stream_config* streams,
                                                    size_t num_streams, uint64_t max_samples, int randomize,
                                                    size_t randomization_window_in_chunks, uint64_t seed,
                                                    cntk_minibatch_source** out);
/* CNTK's MinibatchSourceConfig. Zero-initialize, set struct_size to sizeof(cntk_minibatch_source_config)
 * (fields are only ever added at the end), then what differs from the zeros: max_samples and max_sweeps
 * 0 mean CNTK_INFINITELY_REPEAT; a randomization window of 0 chunks means CNTK's default. */
typedef struct cntk_minibatch_source_config {
  size_t struct_size;
  uint64_t max_samples;
  uint64_t max_sweeps;
  int randomize;
  size_t randomization_window_in_chunks;
  size_t randomization_window_in_samples; /* nonzero: used instead of the window in chunks */
  uint64_t randomization_seed;
  int frame_mode;
  size_t truncation_length; /* nonzero: sequences come in pieces of this many samples */
} cntk_minibatch_source_config;

/* A source over several CTF files joined by sequence id (the first file's sequences drive the
 * order): file i has num_streams[i] streams in streams[i]. */
CNTK_C_EXPORT cntk_status cntk_minibatch_source_create_ctf(const char* const* paths,
                                                           const cntk_stream_config* const* streams,
                                                           const size_t* num_streams, size_t num_files,
                                                           const cntk_minibatch_source_config* config,
                                                           cntk_minibatch_source** out);
CNTK_C_EXPORT void cntk_minibatch_source_release(cntk_minibatch_source* s);
CNTK_C_EXPORT cntk_status cntk_minibatch_source_num_streams(const cntk_minibatch_source* s, size_t* out);
/* Stream i: its name, element type, sample dimension, sparse flag. */
CNTK_C_EXPORT cntk_status cntk_minibatch_source_stream(const cntk_minibatch_source* s, size_t index, char* name,
                                                       size_t name_capacity, size_t* name_length, cntk_dtype* dtype,
                                                       size_t* dim, int* is_sparse);
/* *out is NULL at the end of the data. */
CNTK_C_EXPORT cntk_status cntk_minibatch_source_next(cntk_minibatch_source* s, size_t size_in_samples,
                                                     size_t num_partitions, size_t partition_index,
                                                     cntk_minibatch** out);
/* Per-dimension mean and 1/stddev of the dense streams `stream_indices` over the source's samples
 * to its end (or to the end of a sweep of a repeating source), as CNTK's
 * ComputeInputPerDimMeansAndInvStdDevs; means[i] and inv_stddevs[i] get the stream's sample shape. */
CNTK_C_EXPORT cntk_status cntk_minibatch_source_mean_inv_stddev(cntk_minibatch_source* s, const size_t* stream_indices,
                                                                size_t count, cntk_ndarray** means,
                                                                cntk_ndarray** inv_stddevs);
CNTK_C_EXPORT void cntk_minibatch_release(cntk_minibatch* m);
/* Stream i of the minibatch: its value (NULL when this partition got none), counts, sweep end. */
CNTK_C_EXPORT cntk_status cntk_minibatch_stream(const cntk_minibatch* m, size_t index, cntk_value** value,
                                                size_t* num_sequences, size_t* num_samples, int* sweep_end);

#ifdef __cplusplus
}
#endif
#endif /* CNTK_C_API_H */

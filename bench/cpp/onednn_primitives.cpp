// The oneDNN primitives the suite's workloads spend their time in, timed alone: the
// convolutions of GoogLeNet and AlexNet (forward, backward data, backward weights),
// the LSTMs of char_lstm, atis and bilstm (training forward and backward), and sgemm on
// the products under the recurrences and dense layers. It builds against oneDNN 2.x
// (Debian's 2.6.3, which OpenCNTK links) and 3.x (the PyPI onednn-cpu-gomp wheels), so
// that bench/onednn_versions.sh can compare two versions on this machine, primitive by
// primitive. Every memory takes the layout the primitive picks (format_tag::any), as
// OpenCNTK's kept layouts do; no reorder is timed.
//
//   onednn_primitives [reps-scale]     prints "kind case ms" lines, the median of 5 batches
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  static dnnl::stream s(engine());
  return s;
}

// Milliseconds per call: the median of 5 batches of `reps` calls, after 2 warm-up calls.
double time_ms(const std::function<void()>& call, int reps) {
  call();
  call();
  std::vector<double> batches;
  for (int b = 0; b < 5; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) call();
    batches.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  std::sort(batches.begin(), batches.end());
  return batches[2];
}

// A memory for each argument the primitive takes, in the layout it asks for, filled with
// small values (no denormals, no NaN).
std::unordered_map<int, dnnl::memory> arguments(const dnnl::primitive_desc& pd, const std::vector<int>& ids) {
  std::unordered_map<int, dnnl::memory> args;
  for (int id : ids) {
    md m = pd.query_md(dnnl::query::exec_arg_md, id);
    if (m.get_size() == 0) continue;
    dnnl::memory mem(m, engine());
#if DNNL_VERSION_MAJOR >= 3
    const bool f32 = m.get_data_type() == dt::f32;
#else
    const bool f32 = m.data_type() == dt::f32;
#endif
    if (f32) {
      float* p = static_cast<float*>(mem.get_data_handle());
      std::fill(p, p + m.get_size() / sizeof(float), 0.01f);
    } else {
      std::fill_n(static_cast<char*>(mem.get_data_handle()), m.get_size(), 0);
    }
    args[id] = mem;
  }
  return args;
}

void run(const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>& args) {
  p.execute(stream(), args);
  stream().wait();
}

void report(const char* kind, const std::string& name, double ms) {
  std::printf("%s %s %.4f\n", kind, name.c_str(), ms);
}

// ---------------------------------------------------------------- convolutions

struct Conv {
  const char* net;
  int64_t mb, ic, oc, ih, k, s, p;
  int64_t oh() const { return (ih + 2 * p - k) / s + 1; }
  std::string name() const {
    return std::string(net) + ":mb" + std::to_string(mb) + "ic" + std::to_string(ic) + "oc" + std::to_string(oc) +
           "ih" + std::to_string(ih) + "k" + std::to_string(k) + "s" + std::to_string(s) + "p" + std::to_string(p);
  }
};

void conv(const Conv& c, double scale) {
  const md src({c.mb, c.ic, c.ih, c.ih}, dt::f32, tag::any), wei({c.oc, c.ic, c.k, c.k}, dt::f32, tag::any),
      bias({c.oc}, dt::f32, tag::x), dst({c.mb, c.oc, c.oh(), c.oh()}, dt::f32, tag::any);
  const dims st{c.s, c.s}, pad{c.p, c.p};
  const auto alg = dnnl::algorithm::convolution_direct;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_forward::primitive_desc fwd(engine(), dnnl::prop_kind::forward_training, alg, src, wei, bias, dst,
                                                st, pad, pad, attr);
  dnnl::convolution_backward_data::primitive_desc bwd_data(engine(), alg, src, wei, dst, st, pad, pad, fwd, attr);
  dnnl::convolution_backward_weights::primitive_desc bwd_w(engine(), alg, src, wei, bias, dst, st, pad, pad, fwd, attr);
#else
  dnnl::convolution_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, alg, src, wei, bias, dst, st, pad, pad}, attr, engine());
  dnnl::convolution_backward_data::primitive_desc bwd_data({alg, src, wei, dst, st, pad, pad}, attr, engine(), fwd);
  dnnl::convolution_backward_weights::primitive_desc bwd_w({alg, src, wei, bias, dst, st, pad, pad}, attr, engine(),
                                                           fwd);
#endif
  const double gflop = 2.0 * c.mb * c.oc * c.oh() * c.oh() * c.ic * c.k * c.k / 1e9;
  const int reps = std::max(1, int(scale * 2.0 / gflop));
  auto a = arguments(fwd, {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD});
  dnnl::convolution_forward f(fwd);
  report("conv_fwd", c.name(), time_ms([&] { run(f, a); }, reps));
  auto b = arguments(bwd_data, {DNNL_ARG_DIFF_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_DST, DNNL_ARG_SCRATCHPAD});
  dnnl::convolution_backward_data bd(bwd_data);
  report("conv_bwd_data", c.name(), time_ms([&] { run(bd, b); }, reps));
  auto w = arguments(bwd_w,
                     {DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS, DNNL_ARG_DIFF_DST, DNNL_ARG_SCRATCHPAD});
  dnnl::convolution_backward_weights bw(bwd_w);
  report("conv_bwd_weights", c.name(), time_ms([&] { run(bw, w); }, reps));
}

// ---------------------------------------------------------------- LSTM

struct Lstm {
  const char* net;
  int64_t T, B, C, H;
  std::string name() const {
    return std::string(net) + ":T" + std::to_string(T) + "B" + std::to_string(B) + "C" + std::to_string(C) + "H" +
           std::to_string(H);
  }
};

void lstm(const Lstm& l, double scale) {
  const md src_layer({l.T, l.B, l.C}, dt::f32, tag::tnc), dst_layer({l.T, l.B, l.H}, dt::f32, tag::tnc),
      state({1, 1, l.B, l.H}, dt::f32, tag::ldnc), w_layer({1, 1, l.C, 4, l.H}, dt::f32, tag::any),
      w_iter({1, 1, l.H, 4, l.H}, dt::f32, tag::any), bias({1, 1, 4, l.H}, dt::f32, tag::ldgo);
  const auto dir = dnnl::rnn_direction::unidirectional_left2right;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::lstm_forward::primitive_desc fwd(engine(), dnnl::prop_kind::forward_training, dir, src_layer, state, state,
                                         w_layer, w_iter, bias, dst_layer, state, state, attr);
  dnnl::lstm_backward::primitive_desc bwd(engine(), dnnl::prop_kind::backward, dir, src_layer, state, state, w_layer,
                                          w_iter, bias, dst_layer, state, state, src_layer, state, state, w_layer,
                                          w_iter, bias, dst_layer, state, state, fwd, attr);
#else
  const dnnl::lstm_forward::desc fd(dnnl::prop_kind::forward_training, dir, src_layer, state, state, w_layer, w_iter,
                                    bias, dst_layer, state, state);
  dnnl::lstm_forward::primitive_desc fwd(fd, attr, engine());
  const dnnl::lstm_backward::desc bd(dnnl::prop_kind::backward, dir, src_layer, state, state, w_layer, w_iter, bias,
                                     dst_layer, state, state, src_layer, state, state, w_layer, w_iter, bias, dst_layer,
                                     state, state);
  dnnl::lstm_backward::primitive_desc bwd(bd, attr, engine(), fwd);
#endif
  const double gflop = 2.0 * l.T * l.B * 4 * l.H * (l.C + l.H) / 1e9;
  const int reps = std::max(1, int(scale * 1.0 / gflop));
  const std::vector<int> fwd_args{DNNL_ARG_SRC_LAYER,     DNNL_ARG_SRC_ITER,     DNNL_ARG_SRC_ITER_C,
                                  DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_BIAS,
                                  DNNL_ARG_DST_LAYER,     DNNL_ARG_DST_ITER,     DNNL_ARG_DST_ITER_C,
                                  DNNL_ARG_WORKSPACE,     DNNL_ARG_SCRATCHPAD};
  auto a = arguments(fwd, fwd_args);
  dnnl::lstm_forward f(fwd);
  report("lstm_fwd", l.name(), time_ms([&] { run(f, a); }, reps));
  std::vector<int> bwd_args = fwd_args;
  for (int id : {DNNL_ARG_DIFF_SRC_LAYER, DNNL_ARG_DIFF_SRC_ITER, DNNL_ARG_DIFF_SRC_ITER_C, DNNL_ARG_DIFF_WEIGHTS_LAYER,
                 DNNL_ARG_DIFF_WEIGHTS_ITER, DNNL_ARG_DIFF_BIAS, DNNL_ARG_DIFF_DST_LAYER, DNNL_ARG_DIFF_DST_ITER,
                 DNNL_ARG_DIFF_DST_ITER_C})
    bwd_args.push_back(id);
  auto b = arguments(bwd, bwd_args);
  b[DNNL_ARG_WORKSPACE] = a[DNNL_ARG_WORKSPACE];  // the forward pass's record
  dnnl::lstm_backward bk(bwd);
  report("lstm_bwd", l.name(), time_ms([&] { run(bk, b); }, reps));
}

// ---------------------------------------------------------------- sgemm

void sgemm(int64_t M, int64_t N, int64_t K, double scale) {
  std::vector<float> a(size_t(M * K), 0.01f), b(size_t(K * N), 0.01f), c(size_t(M * N));
  const double gflop = 2.0 * M * N * K / 1e9;
  const int reps = std::max(1, int(scale * 1.0 / gflop));
  auto call = [&] {
    if (dnnl_sgemm('N', 'N', M, N, K, 1.f, a.data(), K, b.data(), N, 0.f, c.data(), N) != dnnl_success) std::abort();
  };
  report("sgemm", "M" + std::to_string(M) + "N" + std::to_string(N) + "K" + std::to_string(K), time_ms(call, reps));
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = argc > 1 ? std::atof(argv[1]) : 1.0;  // about `scale` GFLOP per batch of calls
  const dnnl::version_t* v = dnnl::version();
  std::printf("version %d.%d.%d\n", v->major, v->minor, v->patch);
  const Conv convs[] = {
      {"googlenet", 16, 3, 64, 224, 7, 2, 3},   {"googlenet", 16, 64, 64, 56, 1, 1, 0},
      {"googlenet", 16, 64, 192, 56, 3, 1, 1},  {"googlenet", 16, 192, 64, 28, 1, 1, 0},
      {"googlenet", 16, 128, 192, 28, 3, 1, 1}, {"googlenet", 16, 32, 96, 28, 5, 1, 2},
      {"googlenet", 16, 480, 192, 14, 1, 1, 0}, {"googlenet", 16, 160, 320, 14, 3, 1, 1},
      {"alexnet", 16, 3, 64, 224, 11, 4, 2},    {"alexnet", 16, 64, 192, 27, 5, 1, 2},
      {"alexnet", 16, 192, 384, 13, 3, 1, 1},   {"alexnet", 16, 384, 256, 13, 3, 1, 1},
      {"cnn", 128, 1, 32, 28, 3, 1, 0},         {"cnn", 128, 32, 64, 26, 3, 1, 0},
  };
  for (const Conv& c : convs) conv(c, scale);
  const Lstm lstms[] = {{"char_lstm", 40, 128, 60, 128}, {"atis", 16, 5, 150, 300}, {"bilstm", 100, 32, 128, 64}};
  for (const Lstm& l : lstms) lstm(l, scale);
  sgemm(2048, 2048, 2048, scale);
  sgemm(128, 512, 128, scale);
  sgemm(5, 1200, 300, scale);
  sgemm(16, 4096, 9216, scale);
  sgemm(128, 512, 784, scale);
  return 0;
}

// The two LSTM kernels side by side (src/kernels/cpu/rnn.h's RnnKernel): oneDNN's LSTM
// primitive and the step-by-step kernel, one training forward and backward pass of one
// layer at a time, with a dense or a one-hot input, with or without the input gradient,
// in float32 and (where the CPU has it) in the bfloat16 math mode.
// Prints one JSON object per case: the median over the rounds of each pass, in ms.
//
//   build/dev/bench_lstm_kernels [T B C H [rounds [case]]]   (default: char_lstm's 40 128 60 128;
//                                                            case: run only the cases named so)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cntk/switches.h"
#include "kernels/cpu/rnn.h"

namespace {

using namespace cntk::kernels;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t T = 40, B = 128, C = 60, H = 128, rounds = 20;
  if (argc >= 5) T = std::atoll(argv[1]), B = std::atoll(argv[2]), C = std::atoll(argv[3]), H = std::atoll(argv[4]);
  if (argc >= 6) rounds = std::atoll(argv[5]);
  const std::string only = argc >= 7 ? argv[6] : "";
  const int64_t G = 4 * H, R = T * B;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> uni(-0.1f, 0.1f);
  auto fill = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& e : v) e = uni(gen);
    return v;
  };
  std::vector<float> wx = fill(C * G), wh = fill(H * G), bias = fill(G), dy = fill(R * H);
  // A one-hot input: its dense form and its sparse rows.
  std::vector<float> x(static_cast<size_t>(R * C), 0.f), values(static_cast<size_t>(R), 1.f);
  std::vector<int64_t> starts(static_cast<size_t>(R + 1)), indices(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    starts[size_t(r)] = r;
    indices[size_t(r)] = int64_t(gen() % uint32_t(C));
    x[size_t(r * C + indices[size_t(r)])] = 1.f;
  }
  starts[size_t(R)] = R;
  std::vector<float> y(static_cast<size_t>(R * H)), dx(static_cast<size_t>(R * C)), gwx(wx.size()), gwh(wh.size()),
      gb(bias.size());
  RnnDims d{RnnCell::Lstm, RnnDirection::Forward, 1, C, H, T, B};
  struct Case {
    const char* name;
    RnnKernel kernel;
    bool sparse, want_dx, bf16;
  };
  const Case cases[] = {{"onednn dense", RnnKernel::OneDnn, false, true, false},
                        {"steps dense", RnnKernel::Steps, false, true, false},
                        {"onednn one-hot", RnnKernel::OneDnn, true, false, false},
                        {"steps one-hot", RnnKernel::Steps, true, false, false},
                        {"onednn one-hot bf16", RnnKernel::OneDnn, true, false, true},
                        {"steps one-hot bf16", RnnKernel::Steps, true, false, true}};
  std::printf("[");
  const char* sep = "\n";
  for (const Case& c : cases) {
    if ((!only.empty() && only != c.name) || (c.bf16 && !cntk::bf16_math_available())) continue;
    cntk::set_float32_math(c.bf16 ? "bfloat16" : "float32");
    std::vector<double> fwd, bwd;
    for (int64_t round = 0; round < rounds + 2; ++round) {  // two warm-up rounds
      RnnForwardArgs a;
      a.kernel = c.kernel;
      if (c.sparse)
        a.x_sparse = {starts.data(), indices.data(), values.data()};
      else
        a.x = x.data();
      a.weights = {{wx.data(), wh.data(), bias.data()}};
      a.y = y.data();
      auto t0 = Clock::now();
      auto saved = rnn_forward(d, a);
      const double f = ms_since(t0);
      RnnBackwardArgs b;
      b.dy = dy.data();
      b.grads = {{gwx.data(), gwh.data(), gb.data()}};
      b.dx = c.want_dx ? dx.data() : nullptr;
      t0 = Clock::now();
      rnn_backward(d, *saved, b);
      const double bw = ms_since(t0);
      if (round >= 2) fwd.push_back(f), bwd.push_back(bw);
    }
    std::printf(
        "%s  {\"case\": \"%s\", \"T\": %lld, \"B\": %lld, \"C\": %lld, \"H\": %lld, \"forward_ms\": %.3f, "
        "\"backward_ms\": %.3f}",
        sep, c.name, (long long)T, (long long)B, (long long)C, (long long)H, median(fwd), median(bwd));
    sep = ",\n";
  }
  std::printf("\n]\n");
}

// ONNX's Einsum and Det from the engine's primitives. Einsum: each operand's repeated labels
// become diagonals (a mask times the operand, summed over the repeated axis), then every
// operand is transposed and reshaped onto one common label order, the operands are
// multiplied with broadcasting, and the labels that are not outputs are summed away. The
// product holds every label at once, which suits the small equations of models and tests
// (a contraction-order optimizer is not needed for them). Det: Leibniz's sum over the
// permutations of the last two axes, for matrices up to 4 x 4.
#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include "onnx/import_axes.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;
using Labels = std::vector<int>;  // a letter's code, or kEllipsis + k for the k-th broadcast dim from the right

constexpr int kEllipsis = 1000;

Variable out(const FunctionPtr& f) { return f->output(); }

Variable reshape(ImportContext& c, const Variable& v, std::vector<int64_t> dims) {
  return out(c.primitive("Reshape", {v}, Dictionary{{"newShape", NDShape(std::move(dims))}}));
}

// One term's labels for an operand of `rank` (its "..." standing for the dims no letter names).
Labels parse_term(ImportContext& c, const std::string& term, int64_t rank) {
  Labels letters;
  int64_t ellipsis_at = -1;
  for (size_t k = 0; k < term.size(); ++k) {
    if (term.compare(k, 3, "...") == 0) {
      if (ellipsis_at >= 0) c.fail("a term with two ellipses");
      ellipsis_at = int64_t(letters.size());
      k += 2;
    } else if (std::isalpha(static_cast<unsigned char>(term[k]))) {
      letters.push_back(term[k]);
    } else {
      c.fail(std::string("an equation character '") + term[k] + "' is not a letter");
    }
  }
  if (ellipsis_at < 0) {
    if (rank >= 0 && int64_t(letters.size()) != rank) c.fail("a term's labels do not match its operand's rank");
    return letters;
  }
  const int64_t broadcast = rank - int64_t(letters.size());
  if (broadcast < 0) c.fail("a term names more axes than its operand has");
  Labels l(letters.begin(), letters.begin() + ellipsis_at);
  for (int64_t k = broadcast - 1; k >= 0; --k) l.push_back(kEllipsis + int(k));
  l.insert(l.end(), letters.begin() + ellipsis_at, letters.end());
  return l;
}

// x with its axes q > p of equal labels replaced by their diagonal (kept at p).
Variable diagonal(ImportContext& c, const Variable& x, size_t p, size_t q) {
  auto d = x.shape().dims();
  const int64_t n = d[p];
  if (n != d[q]) c.fail("a repeated label over axes of different lengths");
  // A mask of 1 where the two indices agree: only axes p and q are longer than 1 (row-major).
  std::vector<int64_t> md(d.size(), 1);
  md[p] = md[q] = n;
  NDArrayView eye = NDArrayView::zeros(DataType::Float, NDShape(md));
  for (int64_t i = 0; i < n; ++i) eye.data<float>()[i * n + i] = 1.0f;
  Variable mask = Variable::constant(eye, c.name() + "/diagonal");
  if (x.dtype() != DataType::Float)
    mask = out(c.primitive("Cast", {mask}, Dictionary{{"newDataType", int64_t(x.dtype())}}));
  Variable m = out(c.primitive("ElementTimes", {x, mask}));
  return out(c.primitive(
      "ReduceElements", {m},
      Dictionary{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", false}, {"axis", Axis(int(q))}}));
}

Vars einsum(ImportContext& c) {
  std::string eq;
  for (char ch : c.attr_string("equation"))
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    const size_t e = lhs.find(',', b);
    terms.push_back(lhs.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  if (terms.size() != c.num_inputs()) c.fail("the equation's terms do not match the inputs");

  std::vector<Variable> xs;
  std::vector<Labels> ls;
  std::map<int, int64_t> count;    // how many operand axes carry each label, after diagonals
  std::map<int, int64_t> written;  // how often the terms write each label
  for (size_t i = 0; i < terms.size(); ++i) {
    if (c.input_dyn(i) > 0) c.fail("operands with dynamic axes (sequence, batch) are not supported");
    Variable x = c.input(i);
    for (int64_t d : x.shape().dims())
      if (d < 0) c.fail("operands of free dimensions are not supported");
    Labels l = parse_term(c, terms[i], int64_t(x.shape().rank()));
    for (int a : l) ++written[a];
    for (size_t p = 0; p < l.size(); ++p)
      for (size_t q = l.size(); q-- > p + 1;)
        if (l[q] == l[p]) {
          x = diagonal(c, x, p, q);
          l.erase(l.begin() + long(q));
        }
    for (int a : l) ++count[a];
    xs.push_back(x);
    ls.push_back(l);
  }

  // The output's labels: as written, or (implicit form) the broadcast dims, then the letters
  // used once in alphabetical order.
  Labels out_l;
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    int64_t rank = std::count_if(rhs.begin(), rhs.end(), [](char ch) { return std::isalpha(ch); });
    if (rhs.find("...") != std::string::npos)
      for (auto& [a, n] : count) rank += a >= kEllipsis;
    out_l = parse_term(c, rhs, rank);
  } else {
    for (auto it = count.rbegin(); it != count.rend(); ++it)
      if (it->first >= kEllipsis) out_l.push_back(it->first);
    for (auto& [a, n] : written)
      if (a < kEllipsis && n == 1) out_l.push_back(a);
  }
  for (int a : out_l)
    if (!count.count(a)) c.fail("an output label that no input has");

  // The common order: the output's labels, then those summed away.
  Labels all = out_l;
  for (auto& [a, n] : count)
    if (std::find(all.begin(), all.end(), a) == all.end()) all.push_back(a);
  auto pos = [&](int a) { return size_t(std::find(all.begin(), all.end(), a) - all.begin()); };

  Variable prod;
  for (size_t i = 0; i < xs.size(); ++i) {
    Variable x = xs[i];
    Labels& l = ls[i];
    std::vector<int64_t> perm(l.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return pos(l[size_t(a)]) < pos(l[size_t(b)]); });
    bool moved = false;
    for (size_t k = 0; k < perm.size(); ++k) moved |= perm[k] != int64_t(k);
    if (moved) x = out(c.primitive("TransposeAxes", {x}, Dictionary{{"axisVec", axis_list(perm)}}));
    std::vector<int64_t> full(all.size(), 1);
    for (size_t k = 0; k < l.size(); ++k) full[pos(l[size_t(perm[k])])] = x.shape()[k];
    if (x.shape().rank() != full.size()) x = reshape(c, x, full);
    prod = prod.defined() ? out(c.primitive("ElementTimes", {prod, x})) : x;
  }
  if (all.size() > out_l.size()) {
    std::vector<int64_t> summed;
    for (size_t k = out_l.size(); k < all.size(); ++k) summed.push_back(int64_t(k));
    prod = out(c.primitive("ReduceElements", {prod},
                           Dictionary{{"reductionOpName", std::string("Sum")},
                                      {"reductionKeepDimensions", false},
                                      {"axisVec", axis_list(summed)}}));
  }
  return Vars{prod};
}

// The determinant of the last two axes (n x n, n <= 4) as Leibniz's signed sum of products.
Vars det(ImportContext& c) {
  Variable x = c.input(0);
  if (c.input_dyn(0) > 0) c.fail("inputs with dynamic axes (sequence, batch) are not supported");
  const auto d = x.shape().dims();
  const int64_t rank = int64_t(d.size());
  if (rank < 2 || d[size_t(rank - 1)] != d[size_t(rank - 2)] || d[size_t(rank - 1)] < 1)
    c.fail("the input must be square matrices of known size");
  const int64_t n = d[size_t(rank - 1)];
  if (n > 4) c.fail("matrices larger than 4 x 4 are not supported (the sum has n! terms)");
  auto element = [&](int64_t i, int64_t j) {
    Variable row = out(
        c.primitive("Slice", {x}, Dictionary{{"axis", Axis(int(rank - 2))}, {"beginIndex", i}, {"endIndex", i + 1}}));
    return out(
        c.primitive("Slice", {row}, Dictionary{{"axis", Axis(int(rank - 1))}, {"beginIndex", j}, {"endIndex", j + 1}}));
  };
  std::vector<Variable> cols;  // element(i, j) at i * n + j, built once
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) cols.push_back(element(i, j));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  Variable plus, minus;
  do {
    int64_t inversions = 0;
    for (int64_t a = 0; a < n; ++a)
      for (int64_t b = a + 1; b < n; ++b) inversions += perm[size_t(a)] > perm[size_t(b)];
    Variable term = cols[size_t(perm[0])];
    for (int64_t i = 1; i < n; ++i)
      term = out(c.primitive("ElementTimes", {term, cols[size_t(i * n + perm[size_t(i)])]}));
    Variable& acc = inversions % 2 ? minus : plus;
    acc = acc.defined() ? out(c.primitive("Plus", {acc, term})) : term;
  } while (std::next_permutation(perm.begin(), perm.end()));
  Variable y = minus.defined() ? out(c.primitive("Minus", {plus, minus})) : plus;
  return Vars{reshape(c, y, std::vector<int64_t>(d.begin(), d.end() - 2))};
}

}  // namespace

void register_import_einsum() {
  register_onnx_import("Einsum", einsum, 12);
  register_onnx_import("Det", det, 11);
}

}  // namespace cntk::onnx_io

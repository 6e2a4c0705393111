// The writer of node values (write_format.h), after CNTK's WriteMinibatchWithFormatting.
#include "brainscript/write_format.h"

#include <fstream>

#include "cntk/common.h"

namespace cntk::brainscript {

WriteFormat WriteFormat::read(const std::function<std::optional<std::string>(const std::string&)>& get,
                              const std::string& who) {
  WriteFormat w;
  if (auto type = get("type")) {
    if (*type == "category")
      w.category = true;
    else if (*type == "sparse")
      w.sparse = true;
    else if (*type != "real")
      throw ValueError(who + ": format type must be 'real', 'category' or 'sparse', not '" + *type + "'");
  }
  if (auto t = get("transpose")) w.transpose = !(*t == "false" || *t == "0");
  if (auto mapping = get("labelMappingFile"); mapping && !mapping->empty()) {
    std::ifstream in(*mapping);
    if (!in) throw IOError(who + ": cannot read labelMappingFile '" + *mapping + "'");
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      w.labels.push_back(line);
    }
    w.label_mapping_file = *mapping;
  }
  for (auto [key, field] : {std::pair{"prologue", &w.prologue},
                            {"epilogue", &w.epilogue},
                            {"sequenceSeparator", &w.sequence_separator},
                            {"sequencePrologue", &w.sequence_prologue},
                            {"sequenceEpilogue", &w.sequence_epilogue},
                            {"elementSeparator", &w.element_separator},
                            {"sampleSeparator", &w.sample_separator},
                            {"precisionFormat", &w.precision}})
    if (auto v = get(key)) *field = *v;
  // It becomes part of a printf format: flags, width and precision only.
  if (w.precision.find_first_not_of("0123456789.-+ #") != std::string::npos)
    throw ValueError(who + ": precisionFormat '" + w.precision + "' is not a printf width/precision such as '.4'");
  return w;
}

std::string WriteFormat::processed(std::string s, const std::string& node, size_t minibatch) {
  auto replace = [&s](const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  };
  replace("\\n", "\n");
  replace("\\r", "\r");
  replace("\\t", "\t");
  replace("\\s", " ");
  replace("%s", node);
  replace("%n", std::to_string(minibatch));
  return s;
}

void WriteFormat::print(std::FILE* f, const Variable& v, const cntk::Value& value, const std::string& name,
                        size_t minibatch) const {
  auto put = [f](const std::string& s) { std::fputs(s.c_str(), f); };
  NDArrayView data_view = value.data().to_dense().contiguous().cast(DataType::Double);
  const double* data = data_view.data<double>();
  const size_t dim = size_t(v.shape().total_size());
  // The sample's dimensions first-fastest, as CNTK's sample layout lists them.
  std::vector<size_t> layout(v.shape().dims().rbegin(), v.shape().dims().rend());
  const bool sequential = v.dynamic_axes().size() == 2;
  const auto* mask = sequential ? value.mask().get() : nullptr;
  const size_t width = sequential && value.shape().rank() >= 2 ? size_t(value.shape()[1]) : 1;
  // Samples without a sequence axis are sequences of one step each (CNTK's frame mode).
  const size_t sequences = dim ? size_t(data_view.numel()) / dim / width : 0;
  // Labels serve only where their number is the rows' (or the first dimension's), as in CNTK.
  const bool use_labels = category && !labels.empty() && (labels.size() == dim || layout.at(0) == labels.size());
  if (category && !labels.empty() && !use_labels)
    std::fprintf(stderr,
                 "write: Row dimension %zu does not match number of entries %zu in labelMappingFile, not using "
                 "mapping\n",
                 dim, labels.size());
  const std::string value_format = "%" + precision + (category ? (use_labels ? "s" : "u") : "f");
  const std::string seq_sep = processed(sequence_separator, name, minibatch),
                    seq_pro = processed(sequence_prologue, name, minibatch),
                    seq_epi = processed(sequence_epilogue, name, minibatch),
                    elem_sep = processed(element_separator, name, minibatch),
                    sample_sep = processed(sample_separator, name, minibatch);
  auto print_value = [&](double d) {
    if (use_labels)
      std::fprintf(f, value_format.c_str(), labels[size_t(d) % labels.size()].c_str());
    else if (category)
      std::fprintf(f, value_format.c_str(), unsigned(d));
    else
      std::fprintf(f, value_format.c_str(), d == 0 ? 0.0 : d);  // no negative zeros
  };
  for (size_t s = 0; s < sequences; ++s) {
    size_t length = width;
    if (mask)
      while (length && mask->at(int64_t(s), int64_t(length - 1)) == MaskKind::Invalid) --length;
    // The sequence's values: step t, element k.
    std::vector<double> seq(length * dim);
    for (size_t t = 0; t < length; ++t)
      for (size_t k = 0; k < dim; ++k) seq[t * dim + k] = data[(s * width + t) * dim + k];
    size_t rows = dim;
    if (category) {  // each step's index of its largest value (the last of equal ones, as CNTK's >=)
      for (size_t t = 0; t < length; ++t) {
        size_t best = 0;
        for (size_t k = 1; k < dim; ++k)
          if (seq[t * dim + k] >= seq[t * dim + best]) best = k;
        seq[t] = double(best);
      }
      rows = 1;
    }
    auto at = [&](size_t row, size_t t) { return category ? seq[t] : seq[t * dim + row]; };
    if (s) put(seq_sep);
    put(seq_pro);
    if (sparse) {
      size_t printed = 0;
      for (size_t t = 0; t < length; ++t)
        for (size_t row = 0; row < rows; ++row) {
          const double d = at(row, t);
          if (d == 0) continue;
          if (printed++) put(transpose ? sample_sep : elem_sep);
          if (d != 1.0 || category) print_value(d);
          size_t r = row;
          for (size_t k = 0; k < layout.size(); ++k) {
            std::fprintf(f, "%c%zu", k == 0 ? '[' : ',', r % layout[k]);
            if (layout[k] == labels.size()) std::fprintf(f, "=%s", labels[r % layout[k]].c_str());
            r /= layout[k];
          }
          if (length > 1) std::fprintf(f, ";%zu", t);
          put("]");
        }
    } else {
      // Lines are steps (transpose) or rows; the values of a line the other.
      const size_t lines = transpose ? length : rows, across = transpose ? rows : length;
      const size_t line_stop = transpose ? only_up_to_t : only_up_to_row;
      const size_t across_stop = transpose ? only_up_to_row : only_up_to_t;
      for (size_t j = 0; j < lines; ++j) {
        if (j) put(sample_sep);
        if (j == line_stop && line_stop + 1 < lines) {
          std::fprintf(f, "...+%d", int(lines - j));
          break;
        }
        if (!transpose && layout.size() > 1 && !category) {  // the row's tensor index
          size_t r = j;
          for (size_t k = 0; k < layout.size(); ++k) {
            std::fprintf(f, "%c%zu", k == 0 ? '[' : ',', r % layout[k]);
            r /= layout[k];
          }
          put("]\t");
        }
        for (size_t i = 0; i < across; ++i) {
          if (i) put(elem_sep);
          if (i == across_stop && across_stop + 1 < across) {
            std::fprintf(f, "...+%d", int(across - i));
            break;
          }
          print_value(transpose ? at(i, j) : at(j, i));
        }
      }
    }
    put(seq_epi);
  }
  std::fflush(f);
}

}  // namespace cntk::brainscript

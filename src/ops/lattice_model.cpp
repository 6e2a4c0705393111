#include "ops/lattice_model.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "cntk/common.h"

namespace cntk::lattice {
namespace {

struct Line {
  size_t number;
  std::vector<std::string> tokens;
};

std::vector<Line> read_lines(const std::string& path, const char* what) {
  if (path.empty()) throw ValueError(std::string("lattice_sequence_with_softmax: the ") + what + " path is empty");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IOError(path + ": cannot open the " + what);
  std::vector<Line> out;
  std::string s;
  size_t n = 0;
  while (std::getline(f, s)) {
    ++n;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    std::istringstream ss(s);
    Line l{n, {}};
    for (std::string t; ss >> t;) l.tokens.push_back(t);
    if (!l.tokens.empty()) out.push_back(std::move(l));
  }
  if (f.bad()) throw IOError(path + ": read error in the " + what);
  return out;
}

[[noreturn]] void fail(const std::string& path, size_t line, const std::string& what) {
  throw IOError(path + ":" + std::to_string(line) + ": " + what);
}

double parse_number(const std::string& path, size_t line, const std::string& tok) {
  try {
    size_t used = 0;
    double v = std::stod(tok, &used);
    if (used == tok.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  fail(path, line, "'" + tok + "' is not a number");
}

}  // namespace

SenoneHmmSet SenoneHmmSet::load(const std::string& phone_path, const std::string& state_list_path,
                                const std::string& trans_prob_path) {
  SenoneHmmSet set;
  std::unordered_map<std::string, uint32_t> senone_index;
  for (const Line& l : read_lines(state_list_path, "state list")) {
    if (l.tokens.size() != 1) fail(state_list_path, l.number, "expected one senone name per line");
    if (!senone_index.emplace(l.tokens[0], uint32_t(set.senone_names.size())).second)
      fail(state_list_path, l.number, "duplicate senone '" + l.tokens[0] + "'");
    set.senone_names.push_back(l.tokens[0]);
  }
  if (set.senone_names.empty()) throw IOError(state_list_path + ": the state list has no senones");

  std::unordered_map<std::string, size_t> transition_index;
  for (const Line& l : read_lines(trans_prob_path, "transition probabilities")) {
    if (l.tokens.size() < 3) fail(trans_prob_path, l.number, "expected 'NAME NUMSTATES probabilities...'");
    double n_d = parse_number(trans_prob_path, l.number, l.tokens[1]);
    if (n_d < 1 || n_d > 3 || n_d != std::floor(n_d))
      fail(trans_prob_path, l.number, "the number of states must be 1, 2 or 3, not " + l.tokens[1]);
    size_t n = size_t(n_d);
    size_t expected = 2 + (n + 1) * (n + 1);
    if (l.tokens.size() != expected)
      fail(trans_prob_path, l.number,
           "a " + std::to_string(n) + "-state matrix needs " + std::to_string((n + 1) * (n + 1)) +
               " probabilities, found " + std::to_string(l.tokens.size() - 2));
    TransitionMatrix m;
    m.num_states = n;
    size_t k = 2;
    for (int from = -1; from < int(n); ++from)
      for (size_t to = 0; to <= n; ++to) {
        double p = parse_number(trans_prob_path, l.number, l.tokens[k++]);
        if (p < 0) fail(trans_prob_path, l.number, "negative probability " + l.tokens[k - 1]);
        m.loga[size_t(from + 1)][to] = p > 1e-10 ? std::log(float(p)) : kLogZero;
      }
    if (!transition_index.emplace(l.tokens[0], set.transitions.size()).second)
      fail(trans_prob_path, l.number, "duplicate transition matrix '" + l.tokens[0] + "'");
    set.transitions.push_back(m);
  }

  for (const Line& l : read_lines(phone_path, "HMM tying")) {
    if (l.tokens.size() < 3) fail(phone_path, l.number, "expected 'UNIT TRANSPNAME SENONE...'");
    auto t = transition_index.find(l.tokens[1]);
    if (t == transition_index.end()) fail(phone_path, l.number, "unknown transition matrix '" + l.tokens[1] + "'");
    Hmm h;
    h.name = l.tokens[0];
    h.transition = t->second;
    h.num_states = l.tokens.size() - 2;
    if (h.num_states != set.transitions[t->second].num_states)
      fail(phone_path, l.number,
           "unit '" + h.name + "' has " + std::to_string(h.num_states) + " senones but '" + l.tokens[1] + "' has " +
               std::to_string(set.transitions[t->second].num_states) + " states");
    for (size_t s = 0; s < h.num_states; ++s) {
      auto it = senone_index.find(l.tokens[2 + s]);
      if (it == senone_index.end())
        fail(phone_path, l.number, "senone '" + l.tokens[2 + s] + "' is not in the state list");
      h.senones[s] = it->second;
    }
    if (!set.unit_index.emplace(h.name, set.hmms.size()).second)
      fail(phone_path, l.number, "duplicate unit '" + h.name + "'");
    set.hmms.push_back(h);
  }
  if (set.hmms.empty()) throw IOError(phone_path + ": the HMM tying has no units");
  return set;
}

std::vector<uint32_t> load_symbol_map(const std::string& sym_list_path, const SenoneHmmSet& hmms) {
  std::vector<uint32_t> map;
  bool mappings_started = false;
  auto id_of = [&](const std::string& name, size_t line) -> uint32_t {
    auto it = hmms.unit_index.find(name);
    if (it == hmms.unit_index.end()) fail(sym_list_path, line, "unit '" + name + "' is not in the HMM tying");
    return uint32_t(it->second);
  };
  for (const Line& l : read_lines(sym_list_path, "symbol list")) {
    if (l.tokens.size() == 1) {
      if (mappings_started) fail(sym_list_path, l.number, "plain symbols must come before the 'NAME OTHER' lines");
      map.push_back(id_of(l.tokens[0], l.number));
    } else if (l.tokens.size() == 2) {
      mappings_started = true;
      if (id_of(l.tokens[0], l.number) != id_of(l.tokens[1], l.number))
        fail(sym_list_path, l.number, "'" + l.tokens[0] + "' and '" + l.tokens[1] + "' have different HMMs");
    } else {
      fail(sym_list_path, l.number, "expected 'NAME' or 'NAME OTHER'");
    }
  }
  auto sp = hmms.unit_index.find("sp");
  if (sp == hmms.unit_index.end())
    throw IOError(sym_list_path + ": the HMM tying has no unit 'sp', which the symbol list's implied last entry needs");
  map.push_back(uint32_t(sp->second));
  return map;
}

std::shared_ptr<const SequenceTrainingModel> sequence_training_model(std::string sym_list_path, std::string phone_path,
                                                                     std::string state_list_path,
                                                                     std::string trans_prob_path,
                                                                     const std::string& lattice_config_path) {
  if (!lattice_config_path.empty()) {
    std::ifstream cfg(lattice_config_path);
    if (cfg.good()) {
      std::string* targets[] = {&sym_list_path, &phone_path, &state_list_path, &trans_prob_path};
      for (std::string* t : targets) {
        std::string s;
        if (!std::getline(cfg, s)) break;
        if (!s.empty() && s.back() == '\r') s.pop_back();
        *t = s;
      }
    }
  }
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const SequenceTrainingModel>> cache;
  // Keyed by the paths and the files' sizes and times, so a rewritten file is read again.
  std::string key;
  for (const std::string* p : {&sym_list_path, &phone_path, &state_list_path, &trans_prob_path}) {
    std::error_code ec;
    auto size = std::filesystem::file_size(*p, ec);
    auto time = std::filesystem::last_write_time(*p, ec).time_since_epoch().count();
    key += *p + '\n' + std::to_string(ec ? 0 : size) + ':' + std::to_string(ec ? 0 : time) + '\n';
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto model = std::make_shared<SequenceTrainingModel>();
  model->hmms = SenoneHmmSet::load(phone_path, state_list_path, trans_prob_path);
  model->symbol_map = load_symbol_map(sym_list_path, model->hmms);
  cache.emplace(key, model);
  return model;
}

}  // namespace cntk::lattice

// The acoustic-model description lattice sequence training needs, read from CNTK's text files
// (msra::asr::simplesenonehmm and lattices::archive::GetSymList):
//
// - state list (stateListPath): one senone name per line; line i is senone (output row) i.
// - transition probabilities (transProbPath): per line `NAME N p(-1,0) .. p(-1,N) p(0,0) .. p(N-1,N)`,
//   the (N+1) x (N+1) matrix of an N-state HMM (1 <= N <= 3) from the entry state -1 and states
//   0..N-1 to states 0..N-1 and the exit N, as probabilities (kept as logs; <= 1e-10 means none).
// - HMM tying (phonePath): per line `UNIT TRANSPNAME SENONE...`, one senone per state.
// - symbol list (symListPath): one unit name per line in the lattices' unit numbering, each
//   looked up in the tying; a line `NAME OTHER` (after the plain ones) asserts both names share an
//   HMM. An extra last entry maps to the unit `sp`, which must exist.
//
// Blank lines are skipped and `\r` is dropped. Errors raise cntk::IOError "path:line: what".
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace cntk::lattice {

constexpr float kLogZero = -1e30f;

struct TransitionMatrix {
  size_t num_states = 0;
  std::array<std::array<float, 4>, 4> loga{};  // [from + 1][to], to == num_states is the exit
  float operator()(int from, size_t to) const { return loga[size_t(from + 1)][to]; }
};

struct Hmm {
  std::string name;
  size_t num_states = 0;
  std::array<uint32_t, 3> senones{};
  size_t transition = 0;  // index into SenoneHmmSet::transitions
};

struct SenoneHmmSet {
  std::vector<std::string> senone_names;
  std::vector<TransitionMatrix> transitions;
  std::vector<Hmm> hmms;
  std::unordered_map<std::string, size_t> unit_index;  // unit name -> hmms index

  static SenoneHmmSet load(const std::string& phone_path, const std::string& state_list_path,
                           const std::string& trans_prob_path);
};

// Symbol-list index -> HMM index, with the extra last entry for `sp`.
std::vector<uint32_t> load_symbol_map(const std::string& sym_list_path, const SenoneHmmSet& hmms);

struct SequenceTrainingModel {
  SenoneHmmSet hmms;
  std::vector<uint32_t> symbol_map;
};

// The model for these four files, read once per process (later calls with the same paths share it).
// `lattice_config_path`, when it names a readable file, replaces the four paths by its first four
// lines (CNTK's LatticeNode.config, used to move a trained model's files).
std::shared_ptr<const SequenceTrainingModel> sequence_training_model(std::string sym_list_path, std::string phone_path,
                                                                     std::string state_list_path,
                                                                     std::string trans_prob_path,
                                                                     const std::string& lattice_config_path);

}  // namespace cntk::lattice

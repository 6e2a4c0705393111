// Trainer checkpoints (see cntk/serialize.h): the training graph as a model file and the
// trainer state (learners, external state, random generator states) beside it.
#include <sstream>
#include <unordered_set>

#include "cntk/distributed.h"
#include "cntk/serialize.h"
#include "cntk/trainer.h"
#include "ops/op.h"

namespace cntk {

namespace {

constexpr int64_t kTrainerCheckpointVersion = 1;

std::string state_path(const std::string& path) { return path + ".ckp"; }

FunctionPtr training_graph(const Trainer& t) {
  std::vector<Variable> outs;
  std::unordered_set<VariableImpl*> seen;
  auto add = [&](const FunctionPtr& f) {
    if (!f) return;
    for (auto& o : f->outputs())
      if (seen.insert(o.get()).second) outs.push_back(o);
  };
  add(t.loss_function());
  add(t.evaluation_function());
  add(t.model());
  return Function::combine(outs);
}

// Every function that draws random numbers, blocks opened, in a fixed traversal order.
void random_functions(const FunctionPtr& f, std::vector<FunctionPtr>& out, std::unordered_set<Function*>& seen) {
  for (auto& g : f->topological_order()) {
    if (!seen.insert(g.get()).second) continue;
    if (g->is_block()) {
      random_functions(g->block_root(), out, seen);
    } else if (g->op() && g->op()->stateful_random) {
      out.push_back(g);
    }
  }
}

std::vector<FunctionPtr> random_functions(const FunctionPtr& f) {
  std::vector<FunctionPtr> out;
  std::unordered_set<Function*> seen;
  random_functions(f, out, seen);
  return out;
}

// Leaves (parameters or constants, `what`) of `mine` paired with the loaded ones: by uid
// when every uid is found, else by position.
std::vector<std::pair<Variable, Variable>> pair_leaves(const std::vector<Variable>& mine,
                                                       const std::vector<Variable>& theirs, const std::string& path,
                                                       const std::string& what) {
  std::vector<std::pair<Variable, Variable>> pairs;
  for (auto& p : mine)
    for (auto& q : theirs)
      if (q.uid() == p.uid()) {
        pairs.push_back({p, q});
        break;
      }
  if (pairs.size() != mine.size()) {
    if (mine.size() != theirs.size())
      throw ValueError(path + ": the checkpoint holds " + std::to_string(theirs.size()) + " " + what +
                       ", the trainer's graph has " + std::to_string(mine.size()));
    pairs.clear();
    for (size_t i = 0; i < mine.size(); ++i) pairs.push_back({mine[i], theirs[i]});
  }
  for (auto& [p, q] : pairs)
    if (p.shape() != q.shape() || p.dtype() != q.dtype())
      throw ValueError(path + ": " + p.str() + " does not match the checkpoint's " + q.str());
  return pairs;
}

// Parameters and constants of `mine` paired with those of `saved` (constants too: batch
// normalization's running statistics are constants, and CNTK restores every value).
std::vector<std::pair<Variable, Variable>> pair_values(const FunctionPtr& mine, const FunctionPtr& saved,
                                                       const std::string& path) {
  auto pairs = pair_leaves(mine->parameters(), saved->parameters(), path, "parameters");
  auto constants = pair_leaves(mine->constants(), saved->constants(), path, "constants");
  pairs.insert(pairs.end(), constants.begin(), constants.end());
  return pairs;
}

}  // namespace

void restore_function_values(const FunctionPtr& f, const std::string& path) {
  FunctionPtr saved = load_function(path);
  for (auto& [p, q] : pair_values(f, saved, path)) p.set_value(q.value());
}

void save_trainer_checkpoint(const Trainer& trainer, const std::string& path, const Dictionary& external_state) {
  FunctionPtr graph = training_graph(trainer);
  Dictionary state;
  state["Version"] = kTrainerCheckpointVersion;
  DictValue::List learners;
  for (auto& l : trainer.parameter_learners()) learners.push_back(l->create_checkpoint());
  state["Learners"] = learners;
  state["ExternalState"] = external_state;
  state["DistributedState"] = Dictionary();
  DictValue::List randoms;
  for (auto& f : random_functions(graph)) {
    Dictionary r;
    r["uid"] = f->uid();
    r["op"] = f->op_name();
    std::ostringstream engine;
    auto rs = f->op_state_or<RandomState>([&] { return initial_random_state(*f); });
    std::lock_guard<std::mutex> lock(rs->mu);
    engine << rs->engine;
    r["engine"] = engine.str();
    r["seed"] = DictValue(int64_t(rs->seed));
    r["counter"] = DictValue(int64_t(rs->counter));
    randoms.push_back(r);
  }
  state["RandomStates"] = randoms;
  // Distributed (CNTK's rule): every worker's external state and random generator states
  // go into the main worker's files, which only the main worker writes.
  auto comm = trainer.communicator();
  if (comm) {
    Dictionary mine;
    mine["ExternalState"] = external_state;
    mine["RandomStates"] = randoms;
    comm->barrier();
    auto all = comm->all_gather(dictionary_to_bytes(mine));
    Dictionary workers;
    for (size_t r = 0; r < all.size(); ++r) workers[std::to_string(r)] = dictionary_from_bytes(all[r]);
    state["DistributedState"] = workers;
  }
  if (!comm || comm->current_worker().is_main()) {
    // Both files are complete under temporary names before either is renamed into place.
    std::string model_bytes = save_function_to_bytes(graph);
    std::string state_bytes = dictionary_to_bytes(state);
    write_file_atomically(path, model_bytes);
    write_file_atomically(state_path(path), state_bytes);
  }
  // Nobody reads the files before they are complete.
  if (comm) comm->barrier();
}

Dictionary restore_trainer_checkpoint(Trainer& trainer, const std::string& path) {
  FunctionPtr saved = load_function(path);
  Dictionary state = load_dictionary(state_path(path));
  FunctionPtr graph = training_graph(trainer);
  auto fail = [&](const std::string& what) -> void { throw IOError(state_path(path) + ": " + what); };
  auto lit = state.find("Learners");
  if (lit == state.end() || !lit->second.is<std::shared_ptr<DictValue::List>>()) fail("no 'Learners' list");
  const auto& learners = lit->second.as_list();
  if (learners.size() != trainer.parameter_learners().size())
    fail("it holds " + std::to_string(learners.size()) + " learners, the trainer has " +
         std::to_string(trainer.parameter_learners().size()));
  auto pairs = pair_values(graph, saved, path);
  std::vector<FunctionPtr> randoms = random_functions(graph);
  // A worker other than the main one takes its own part of the distributed state.
  const Dictionary* own = nullptr;
  auto comm = trainer.communicator();
  if (comm && !comm->current_worker().is_main() && state.count("DistributedState") &&
      state.at("DistributedState").is<std::shared_ptr<Dictionary>>()) {
    const Dictionary& workers = state.at("DistributedState").as_dict();
    auto it = workers.find(std::to_string(comm->rank()));
    if (it != workers.end() && it->second.is<std::shared_ptr<Dictionary>>()) own = &it->second.as_dict();
  }
  const Dictionary& source = own ? *own : state;
  const DictValue::List* rstates = nullptr;
  if (source.count("RandomStates") && source.at("RandomStates").is<std::shared_ptr<DictValue::List>>()) {
    rstates = &source.at("RandomStates").as_list();
    if (rstates->size() != randoms.size())
      fail("it holds " + std::to_string(rstates->size()) + " random generator states, the trainer's graph has " +
           std::to_string(randoms.size()) + " random ops");
  }
  std::vector<std::shared_ptr<RandomState>> engines(randoms.size());
  for (size_t i = 0; rstates && i < randoms.size(); ++i) {
    const DictValue& v = (*rstates)[i];
    if (!v.is<std::shared_ptr<Dictionary>>() || !v.as_dict().count("engine") || !v.as_dict().count("op"))
      fail("random generator state " + std::to_string(i) + " is malformed");
    if (v.as_dict().at("op").as_string() != randoms[i]->op_name())
      fail("random op " + std::to_string(i) + " is '" + v.as_dict().at("op").as_string() + "' in the checkpoint but '" +
           randoms[i]->op_name() + "' in the trainer's graph");
    const std::string& text = v.as_dict().at("engine").as_string();
    if (text.empty()) continue;
    auto rs = initial_random_state(*randoms[i]);
    std::istringstream in(text);
    in >> rs->engine;
    if (!in) fail("random generator state " + std::to_string(i) + " does not parse");
    // The counter-based stream: its key and position (absent from checkpoints of earlier
    // versions, which then start it from the function's own rngSeed and rngOffset).
    for (auto [key, field] : {std::pair{"seed", &rs->seed}, std::pair{"counter", &rs->counter}}) {
      auto it = v.as_dict().find(key);
      if (it == v.as_dict().end()) continue;
      if (!it->second.is<int64_t>()) fail("random generator state " + std::to_string(i) + " has a malformed " + key);
      *field = uint64_t(it->second.as_int());
    }
    engines[i] = rs;
  }
  // Everything checked: now change the trainer.
  for (auto& [p, q] : pairs) p.set_value(q.value());
  for (size_t i = 0; i < learners.size(); ++i) {
    if (!learners[i].is<std::shared_ptr<Dictionary>>()) fail("learner " + std::to_string(i) + " has no state");
    trainer.parameter_learners()[i]->restore_from_checkpoint(learners[i].as_dict());
  }
  for (size_t i = 0; rstates && i < randoms.size(); ++i) randoms[i]->set_op_state(engines[i]);
  // Nobody writes the files again before every worker has read them.
  if (comm) comm->barrier();
  auto eit = source.find("ExternalState");
  return eit != source.end() && eit->second.is<std::shared_ptr<Dictionary>>() ? eit->second.as_dict() : Dictionary();
}

}  // namespace cntk

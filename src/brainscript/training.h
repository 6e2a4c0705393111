// The actions that train and run networks: train, test/eval, write, dumpNode (training.cpp).
#pragma once
#include <map>
#include <string>

#include "brainscript/command_line.h"

namespace cntk::brainscript {

void register_training_actions(std::map<std::string, Action>& table);

}  // namespace cntk::brainscript

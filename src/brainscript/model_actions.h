// Actions over saved models that neither train nor write outputs (model_actions.cpp): cv, bnstat, edit.
#pragma once
#include <map>
#include <string>

#include "brainscript/command_line.h"

namespace cntk::brainscript {

// Registers cv, bnstat and edit; cv runs the table's "test" action, which must be there.
void register_model_actions(std::map<std::string, Action>& table);

}  // namespace cntk::brainscript

// The `cntk` command: runs CNTK 2.7 configuration files (cntk configFile=x.cntk ...).
#include <string>
#include <vector>

#include "brainscript/command_line.h"

int main(int argc, char** argv) { return cntk::brainscript::run_cntk(std::vector<std::string>(argv + 1, argv + argc)); }

// gantry: the command line client of gantryd. All logic lives in gantry_cli_lib (cli.h).
#include "cli/cli.h"

int main(int argc, char** argv) {
  return gantry::cli::RunCli(argc, argv, gantry::cli::SystemEnvironment());
}

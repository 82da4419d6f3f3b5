/* parplan: the command line (src/entry.c, pp_cli_main, dispatches the commands; the Python
 * package calls the same function in-process, src/pyapi.c). */
#include "cli.h"

int main(int argc, char **argv) { return pp_cli_main(argc, argv); }

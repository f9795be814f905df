#include "flowrun_build_info.h"

// A string macro set on the compiler's command line by ./install.sh: the one
// way to put the commit into the binary that needs neither a generated source
// file (a dirty tree, or a build plugin) nor git at `swift build` time.
#ifndef FLOWRUN_COMMIT
#define FLOWRUN_COMMIT ""
#endif

const char *flowrun_build_commit(void) { return FLOWRUN_COMMIT; }

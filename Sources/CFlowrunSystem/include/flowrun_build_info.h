#ifndef FLOWRUN_BUILD_INFO_H
#define FLOWRUN_BUILD_INFO_H

/// The git commit flowrun was built from, as ./install.sh passes it
/// (`-Xcc -DFLOWRUN_COMMIT="…"`); "" for a plain `swift build`, which needs
/// no git and no generated file.
const char *flowrun_build_commit(void);

#endif

// The file system a descriptor is on, for the incremental state's snapshot:
// a network file system's folder stamps may be cached (StateSnapshot.swift).
#include "flowrun_system.h"
#include <sys/vfs.h>

long flowrun_file_system_type(int descriptor) {
    struct statfs info;
    if (fstatfs(descriptor, &info) != 0) return -1;
    return (long)info.f_type;
}

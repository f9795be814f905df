/// Everything `ProcessLauncher` needs to start one task's shell.
struct LaunchRequest: Sendable {
    /// The shell's path, e.g. "/bin/sh". A name without "/" is looked up in
    /// flowrun's own PATH (not `environment`'s).
    var shell: String
    /// Run as `shell -c script`.
    var script: String
    /// When set, run as `shell scriptFile` instead (`script` is then unused):
    /// for a script longer than one argument may be (`ScriptFile`).
    var scriptFile: String? = nil
    /// Words between the shell and `-c` or the script file (a task's `shell: [bash, -eu]`).
    var shellArguments: [String] = []
    /// Run `scriptFile` itself (its `#!` line names the interpreter); `shell` is then the file.
    var executesScriptFile = false
    /// When set, exec these words with no shell (`DirectCommand`); `shell` is then the first.
    var command: [String]? = nil
    /// Where a `shell` without '/' is looked up: a PATH value; nil is flowrun's own PATH.
    var searchPath: String? = nil
    /// The child's environment, "K=V" entries; nothing else is inherited
    /// but `inherited`. Put the tree's `ProcessTreeMarker.environmentEntry`
    /// here so `ProcessTreeKiller` can find descendants that leave the
    /// process group.
    var environment: [String]
    /// Entries placed before `environment`'s, built once for many launches.
    /// `environment` must not name any of them again.
    var inherited: InheritedEnvironment? = nil
    /// The child's working directory; nil keeps flowrun's.
    var workingDirectory: String?
    /// Becomes the child's fd 1, e.g. a pipe's write end; nil is /dev/null.
    /// Use a descriptor >= 3 (pipes and files normally are).
    var standardOutput: Int32?
    /// Becomes the child's fd 2; nil is /dev/null. May equal `standardOutput`.
    var standardError: Int32?
    /// `cgroup.procs` descriptors (at most two: cgroup v1's memory and cpu
    /// hierarchies) the child joins before exec; empty for none.
    var cgroupProcs: [Int32] = []
}

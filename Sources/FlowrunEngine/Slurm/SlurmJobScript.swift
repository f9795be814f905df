import FlowrunValues

/// What one attempt on Slurm runs, and the files it leaves in the shared
/// folder: everything the job script needs, worked out on the engine's
/// queue before submission.
struct SlurmTaskSpec: Sendable {
    /// What runs: `SHELL ARGS -c SCRIPT`, `INTERPRETER FILE` or `FILE`.
    var command: [String]
    /// The script as a file (`STEM.script`, beside the others) for a task's
    /// `shell:` or a `#!` script; nil for `SHELL -c`.
    var scriptFile: (text: String, executable: Bool)?
    /// `KEY=VALUE` on top of the environment sbatch passes on (flowrun's own).
    var environment: [(key: String, value: String)]
    /// Absolute: the task's `cwd:`, or the folder flowrun runs in.
    var workingDirectory: String
    /// The attempt's files in the shared folder, by stem (`000042-NAME.1`).
    var files: SlurmFiles
    /// The declared memory (`--mem`), for Slurm's `OUT_OF_MEMORY` to say
    /// the limit as a local attempt's reason does.
    var memoryLimit: UInt64? = nil
}

/// An attempt's files in the shared folder's `slurm/`: its stdout and
/// stderr, `$FLOWRUN_OUTPUT`, and the exit status the job writes last.
struct SlurmFiles: Sendable {
    /// `DIR/slurm/000042-NAME.1`: the others add `.out`, `.err`, `.output`, `.exit`.
    var stem: String
    var stdout: String { stem + ".out" }
    var stderr: String { stem + ".err" }
    var output: String { stem + ".output" }
    var exit: String { stem + ".exit" }
    var script: String { stem + ".script" }
}

/// The text of job scripts (pure: `SlurmJobScriptTests`).
///
/// One submission, one job script (`DIR/slurm/sN/job.sh`, kept): it runs
/// element `${SLURM_ARRAY_TASK_ID:-0}`'s script beside it (`0.sh`, `1.sh`, …),
/// so an array's thousand members are one `sbatch` and a file each.
enum SlurmJobScript {
    static func job(runID: String, batchFolder: String, count: Int) -> String {
        """
        #!/bin/sh
        # flowrun run \(runID): \(count) task\(count == 1 ? "" : "s"); element N runs \(count == 1 ? "0.sh" : "N.sh") beside this file.
        task_umask=$(umask)
        umask 077
        exec /bin/sh \(ShellQuoting.word(batchFolder))/"${SLURM_ARRAY_TASK_ID:-0}.sh" "$task_umask"

        """
    }

    /// One member: cd, env, the task's script with stdout and stderr to the
    /// shared folder, then its exit status, written whole (tmp + rename) so
    /// that a reader never sees half of it. Its first argument is the umask
    /// the job started with: the task runs under it, flowrun's files under 077.
    static func element(_ spec: SlurmTaskSpec) -> String {
        let files = spec.files
        var lines = [
            "#!/bin/sh",
            "out=\(ShellQuoting.word(files.stdout)) err=\(ShellQuoting.word(files.stderr)) status_file=\(ShellQuoting.word(files.exit))",
            ": >\"$out\"; : >\"$err\"; : >>\(ShellQuoting.word(files.output))",
            "finish() { umask 077; printf '%s\\n' \"$1\" >\"$status_file.tmp\" && mv -f \"$status_file.tmp\" \"$status_file\"; exit \"$1\"; }",
            "cd \(ShellQuoting.word(spec.workingDirectory)) 2>>\"$err\" || { echo \"flowrun: cannot enter \(String(spec.workingDirectory.filter { $0 != "\"" && $0 != "$" && $0 != "`" && $0 != "\\" })) on $(hostname)\" >>\"$err\"; finish 1; }",
        ]
        for entry in spec.environment {
            lines.append("export \(entry.key)=\(ShellQuoting.word(entry.value))")
        }
        let command = spec.command.map(ShellQuoting.word).joined(separator: " ")
        // flowrun's files above are private (umask 077); the task itself gets the umask the job
        // was submitted with (flowrun's, which Slurm gives the job), as a local task does.
        lines.append("umask \"${1:-077}\"")
        lines.append("\(command) </dev/null >>\"$out\" 2>>\"$err\"")
        lines.append("finish $?")
        return lines.joined(separator: "\n") + "\n"
    }
}

import FlowrunModel
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
    /// The run's `kill_grace`: how long the job script gives a stopped task
    /// (TERM, INT or HUP) before it SIGKILLs the task's process group.
    var killGrace: Duration
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
    /// The stop flowrun asked for (`TERM`, `INT`, `HUP`, `QUIT`), written
    /// before each `scancel --signal`: the job script reads it once its
    /// traps are set, for a signal Slurm dropped before the script ran.
    var stop: String { stem + ".stop" }
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
    ///
    /// Slurm signals the job script's process group only (`scancel --signal`,
    /// a cancel, `--time`), and on a cluster that tracks processes by
    /// parentage (`proctrack/linuxproc`) its final KILL misses whatever this
    /// shell left behind. So this shell outlives the task: the task runs in a
    /// process group of its own under coreutils' `timeout` (no time limit),
    /// and a TERM, INT or HUP here is passed on to `timeout`, which sends it
    /// to the task's group and SIGKILLs that group `kill_grace` later (at
    /// once if the task ends sooner); QUIT, flowrun's kill, SIGKILLs the
    /// group at once. (`timeout` rather than a background job of sh: dash has
    /// no job control without a terminal, and starts a background job with
    /// INT and QUIT ignored; `timeout` gives the task them back.)
    static func element(_ spec: SlurmTaskSpec) -> String {
        let files = spec.files
        var lines = [
            "#!/bin/sh",
            "out=\(ShellQuoting.word(files.stdout)) err=\(ShellQuoting.word(files.stderr)) status_file=\(ShellQuoting.word(files.exit))",
            ": >\"$out\"; : >\"$err\"; : >>\(ShellQuoting.word(files.output))",
            // A stop from here on (flowrun's kill is QUIT, then Slurm's cancel: TERM to this group) must not kill `mv`.
            "finish() { trap '' TERM INT HUP QUIT; umask 077; printf '%s\\n' \"$1\" >\"$status_file.tmp\" && mv -f \"$status_file.tmp\" \"$status_file\"; exit \"$1\"; }",
            "cd \(ShellQuoting.word(spec.workingDirectory)) 2>>\"$err\" || { echo \"flowrun: cannot enter \(String(spec.workingDirectory.filter { $0 != "\"" && $0 != "$" && $0 != "`" && $0 != "\\" })) on $(hostname)\" >>\"$err\"; finish 1; }",
        ]
        // `timeout` found on the job's PATH, before the task's `env:` (a PATH of its own) applies;
        // none there is said, not left to a task's "timeout: not found" and exit 127.
        lines.append(#"flowrun_timeout=$(command -v timeout) || { echo "flowrun: the job script needs coreutils' timeout on the job's PATH; there is none on $(hostname) (PATH=$PATH)" >>"$err"; finish 127; }"#)
        let command = spec.command.map(ShellQuoting.word).joined(separator: " ")
        // A stop: passed on to `timeout` (its pid leads the task's group); `flowrun_stop` tells the loop
        // below, and keeps one that came before the pid was known. (flowrun_*: not a name of the task's env.)
        lines.append(#"flowrun_pid= flowrun_stop=; stop() { flowrun_stop=$1; [ -n "$flowrun_pid" ] || return 0; if [ "$1" = QUIT ]; then kill -s KILL -- -"$flowrun_pid" || kill -s KILL "$flowrun_pid"; else kill -s "$1" "$flowrun_pid"; fi 2>/dev/null; }"#)
        lines.append("trap 'stop TERM' TERM; trap 'stop INT' INT; trap 'stop HUP' HUP; trap 'stop QUIT' QUIT")
        // A stop Slurm dropped: a `scancel --signal` that reaches the node after the job is RUNNING
        // but before slurmstepd has started this script signals no process and is lost (measured:
        // 2 of 15 jobs signalled as squeue first said R). flowrun writes the signal's name here
        // before each `scancel --signal`; read after the traps are set, it is never missed: one
        // that came earlier is in the file, one that comes later is trapped. The task is then not
        // started, and the exit status is the signal's, as a task stopped by it.
        // In braces: the shell says it cannot open a file that is not there before a `2>/dev/null`
        // after it applies, and every job's Slurm output began with that line.
        lines.append("if { read -r flowrun_asked <\(ShellQuoting.word(files.stop)); } 2>/dev/null; then case $flowrun_asked in TERM) finish 143;; INT) finish 130;; HUP) finish 129;; QUIT) finish 131;; esac; fi")
        // flowrun's files above are private (umask 077); the task itself gets the umask the job
        // was submitted with (flowrun's, which Slurm gives the job), as a local task does.
        // The task's `env:` is exported in the subshell that becomes `timeout`, never in this shell:
        // an env `PATH` without /bin left `mv` unfound (no exit file), and one named `out`,
        // `err` or `status_file` sent the task's output and exit status elsewhere.
        lines.append("(")
        for entry in spec.environment {
            lines.append("export \(entry.key)=\(ShellQuoting.word(entry.value))")
        }
        lines.append("umask \"${1:-077}\"")
        lines.append("exec \"$flowrun_timeout\" --kill-after=\(graceText(spec.killGrace)) 0 \(command)")
        lines.append(") </dev/null >>\"$out\" 2>>\"$err\" &")
        lines.append(#"flowrun_pid=$!; [ -z "$flowrun_stop" ] || stop "$flowrun_stop""#)
        // `wait` returns early when a trap runs: wait again (a task gone already gives its status again).
        lines.append(#"while flowrun_stop=; wait "$flowrun_pid"; flowrun_status=$?; [ -n "$flowrun_stop" ]; do :; done"#)
        // What the task left in its group (a child that ignores TERM while the task ended on it, a
        // background job still running at its end): TERM, then SIGKILL after kill_grace, as a local
        // task's leftovers; at once on QUIT. Left alone, init adopts them and linuxproc's KILL misses them.
        // A zombie is not left running: an orphan's goes to init, which reaps it when it will (1–2 s on
        // some VMs, where waiting for it made every cancel take the grace). The states are read from
        // /proc, not from a `ps` on the job's PATH (one that printed something else, or a `Z` for all,
        // left a live leftover behind). A process whose first thread ended while others run shows `Z`
        // too (`pthread_exit` in main): it is a zombie only with one thread left (`num_threads`, the
        // 20th field of its stat, after the command in parentheses). Without /proc, any member counts,
        // as `kill -0` says.
        lines.append(#"flowrun_running() { kill -s 0 -- -"$flowrun_pid" 2>/dev/null || return 1; [ -r /proc/self/stat ] || return 0; flowrun_zombie=; for flowrun_file in /proc/[0-9]*/stat; do read -r flowrun_line 2>/dev/null <"$flowrun_file" || continue; set -- ${flowrun_line##*) }; [ "$3" = "$flowrun_pid" ] || continue; [ "$1" = Z ] && [ "${18:-2}" = 1 ] || return 0; flowrun_zombie=1; done; [ -z "$flowrun_zombie" ]; }"#)
        lines.append(#"flowrun_left=\#(graceTenths(spec.killGrace)); while flowrun_running; do if [ "$flowrun_left" -le 0 ] || [ "$flowrun_stop" = QUIT ]; then kill -s KILL -- -"$flowrun_pid" 2>/dev/null; break; fi; [ "$flowrun_left" -lt \#(graceTenths(spec.killGrace)) ] || kill -s TERM -- -"$flowrun_pid" 2>/dev/null; sleep 0.1; flowrun_left=$((flowrun_left - 1)); done"#)
        lines.append("finish \"$flowrun_status\"")
        return lines.joined(separator: "\n") + "\n"
    }

    /// `kill_grace` in tenths of a second, rounded up, at least 1: how many
    /// 0.1 s polls the job script gives the task's leftovers after TERM.
    static func graceTenths(_ grace: Duration) -> Int {
        let tenths = (grace.seconds * 10).rounded(.up)
        guard tenths.isFinite, tenths < 1e15 else { return 1_000_000_000_000_000 }
        return max(1, Int(tenths))
    }

    /// `kill_grace` as `timeout` takes it: seconds, to the millisecond; never
    /// 0, which would turn the SIGKILL off.
    static func graceText(_ grace: Duration) -> String {
        let milliseconds = max(1, Int((grace.seconds * 1000).rounded(.up)))
        let whole = milliseconds / 1000, fraction = milliseconds % 1000
        guard fraction != 0 else { return "\(whole)s" }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 3 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)s"
    }
}

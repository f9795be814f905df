import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEnd {
    /// SPEC §7 "Signals" and §11 "Nothing outlives flowrun": no task process
    /// or descendant outlives flowrun, even one that started its own session,
    /// cleared its environment, renamed itself or changed its user, and even
    /// when flowrun itself is killed with SIGKILL or by the OOM killer. The
    /// pid the shell knows is a supervisor; the engine is its only child.
    @Suite struct RunSupervisorTests {
        // MARK: The run's end

        /// A task run as root starts a daemon under another user, in a session
        /// of its own (`setsid setpriv --reuid=65534 …`): gone when flowrun exits.
        @Test func aDaemonUnderAnotherUserIsKilledAtTheRunsEnd() throws {
            try #require(geteuid() == 0, "setpriv --reuid needs root (CI runs as root)")
            let setpriv = try #require(Self.tool("setpriv"), "setpriv is not installed")
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  daemon:
                    run: |
                      setsid \(setpriv) --reuid=65534 --regid=65534 --clear-groups sleep 60 >/dev/null 2>&1 &
                      echo $! > "$SANDBOX/daemon.pid"
                      # Ready once the daemon runs as the other user.
                      until grep -Eq '^Uid:[[:space:]]+65534' /proc/$!/status 2>/dev/null; do sleep 0.01; done
                      echo "daemon up"
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.stdout("daemon") == "daemon up", "the daemon never ran as uid 65534\n\(record.overview)")
            let pid = try #require(sandbox.pid(in: "daemon.pid"))
            #expect(!ProcessProbe.isAlive(pid), "the daemon \(pid) (\(ProcessProbe.commandLine(of: pid))) of uid 65534 outlived flowrun")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// A descendant that left the session, cleared its environment (no
        /// marker, no token) and renamed itself (`exec -a`), plus its own child:
        /// both killed when the run ends, found by their parent chain alone.
        @Test func anEscapeeWithoutMarkerOrNameIsKilledAtTheRunsEnd() throws {
            let bash = try #require(Self.tool("bash"), "bash is not installed (exec -a)")
            let sandbox = try RunSandbox()
            let escapee = """
                setsid env -i \(bash) -c 'sleep 1000 & echo $! > \(sandbox.path)/grandchild.pid; echo $$ > \(sandbox.path)/renamed.pid; exec -a innocent sleep 1001' >/dev/null 2>&1 &
                """
            let run = try sandbox.run("""
                tasks:
                  escape:
                    run: |
                      \(escapee)
                      until [ -s "$SANDBOX/renamed.pid" ] && [ -s "$SANDBOX/grandchild.pid" ]; do sleep 0.01; done
                      pid=$(cat "$SANDBOX/renamed.pid")
                      until tr '\\0' ' ' < /proc/$pid/cmdline | grep -q '^innocent'; do sleep 0.01; done
                      tr '\\0' '\\n' < /proc/$pid/environ | grep -c FLOWRUN_TREE || true
                      echo $(tr '\\0' ' ' < /proc/$pid/cmdline)
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            // The escapee showed no marker (0 lines) under its new name.
            #expect(record.stdout("escape") == "0\ninnocent 1001", "\(record.overview)")
            for file in ["renamed.pid", "grandchild.pid"] {
                let pid = try #require(sandbox.pid(in: file), "no \(file)")
                #expect(!ProcessProbe.isAlive(pid), "\(file): \(pid) (\(ProcessProbe.commandLine(of: pid))) outlived flowrun")
            }
        }

        // MARK: Signals reach the engine once

        /// `pkill flowrun` signals both processes, one after the other: the
        /// engine hears SIGTERM directly and passed on by the supervisor, and
        /// must count it once — a graceful stop (exit 143, one SIGTERM to the
        /// task, whose trap then finishes), not "a second signal kills
        /// everything at once". The second kill waits until the first was
        /// acted on (the task's trap ran), so the two cannot merge into one
        /// pending signal in the kernel.
        /// One task that traps SIGTERM, notes each one, and finishes half a
        /// second later: `one.finished` exists only if it was stopped once,
        /// gracefully, and not killed at once by a second signal.
        static let taskThatStopsGracefully = """
                kill_grace: 10s
                tasks:
                  one:
                    run: |
                      trap 'echo TERM >> "$SANDBOX/one.trap"; stop=1' TERM
                      echo ready > "$SANDBOX/one.ready"
                      while [ -z "$stop" ]; do sleep 0.05; done
                      sleep 0.5
                      echo finished > "$SANDBOX/one.finished"
                """

        @Test(arguments: ["supervisor first", "engine first"])
        func oneSenderSignallingBothProcessesCountsAsOneSignal(_ order: String) throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start(Self.taskThatStopsGracefully)
            try #require(sandbox.waitFor("one.ready"))
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            let (first, second) = order == "supervisor first" ? (flowrun.pid, engine) : (engine, flowrun.pid)
            kill(first, SIGTERM)
            try #require(sandbox.waitFor("one.trap", timeout: .seconds(5)), "the first SIGTERM was not acted on")
            kill(second, SIGTERM)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 143, "\(ended)")
            #expect(sandbox.lines("one.trap") == ["TERM"])
            #expect(sandbox.read("one.finished") == "finished\n", "the task was killed, not stopped gracefully: one signal counted twice")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// A real Ctrl-C: the terminal sends SIGINT to the whole foreground
        /// group, supervisor and engine both. The supervisor must not pass it
        /// on (the engine has it already), or one Ctrl-C would count as two
        /// and kill everything at once. flowrun runs as a session leader with
        /// a pseudo-terminal as its controlling terminal (`setsid -c`).
        @Test func oneCtrlCAtTheTerminalCountsAsOneSignal() throws {
            let setsid = try #require(Self.tool("setsid"), "setsid is not installed")
            let terminal = try PseudoTerminal()
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.taskThatStopsGracefully)
            // setsid forks (the test's child leads a process group) and waits: the session's leader is flowrun.
            let flowrun = try LiveFlowrun(
                sandbox.arguments(workflow, []), environment: sandbox.environment, directory: sandbox.path,
                hardTimeout: .seconds(30),
                wrapper: ["/bin/sh", "-c", "exec \(setsid) -w -c \"$@\" < \(terminal.devicePath)", "sh"])
            try #require(sandbox.waitFor("one.ready"))
            try #require(terminal.type([0x03]), "cannot type at the terminal")
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(sandbox.lines("one.trap") == ["TERM"])
            #expect(sandbox.read("one.finished") == "finished\n", "the task was killed, not stopped gracefully: one Ctrl-C counted twice")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// Under `nohup`, SIGHUP stays ignored in the pid the shell knows: the
        /// supervisor installs no handler for it (so it never passes one on),
        /// and a SIGHUP sent to it leaves the run to finish normally.
        @Test func aSignalTheCallerIgnoredStaysIgnoredInTheSupervisor() throws {
            let nohup = try #require(Self.tool("nohup"), "nohup is not installed")
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  one:
                    run: |
                      echo ready > "$SANDBOX/one.ready"
                      until [ -e "$SANDBOX/release" ]; do sleep 0.02; done
                """)
            let flowrun = try LiveFlowrun(
                sandbox.arguments(workflow, []), environment: sandbox.environment, directory: sandbox.path,
                hardTimeout: .seconds(30), wrapper: [nohup])
            try #require(sandbox.waitFor("one.ready"))
            let status = ProcessProbe.text("/proc/\(flowrun.pid)/status") ?? ""
            func mask(_ field: String) -> UInt64 {
                let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
                return UInt64(line.split(separator: "\t").last ?? "", radix: 16) ?? 0
            }
            let hangup: UInt64 = 1 << (UInt64(SIGHUP) - 1)
            #expect(mask("SigIgn") & hangup != 0, "SIGHUP is not ignored in the supervisor\n\(status)")
            #expect(mask("SigCgt") & hangup == 0, "the supervisor handles SIGHUP (it would pass it on)")
            #expect(mask("SigCgt") & (1 << (UInt64(SIGTERM) - 1)) != 0, "the supervisor does not handle SIGTERM")
            kill(flowrun.pid, SIGHUP)
            #expect(FileManager.default.createFile(atPath: sandbox.file("release"), contents: nil))
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 0, "\(ended)")
            #expect(try sandbox.record().status("one") == "succeeded")
        }

        // MARK: flowrun killed

        /// 50 tasks at once, each leaving a background child and a `setsid`
        /// grandchild; every fifth also a double-forked `setsid env -i`
        /// escapee (no token: known by the pid it wrote).
        static func fiftyTasksWithGrandchildren(_ sandbox: RunSandbox) -> String {
            var text = "max_parallel: 60\nkill_grace: 30s\ntasks:\n"
            for index in 0..<50 {
                let hidden = index % 5 == 0
                    ? "( setsid env -i /bin/sh -c 'echo $$ > \(sandbox.path)/hidden-\(index).pid; exec sleep 1000' >/dev/null 2>&1 & )\n"
                        + "      until [ -s \"$SANDBOX/hidden-\(index).pid\" ]; do sleep 0.01; done\n      "
                    : ""
                text += """
                      t\(index):
                        run: |
                          trap '' TERM
                          sleep 1000 &
                          setsid sh -c 'exec sleep 1000' &
                          \(hidden)touch "$SANDBOX/ready-\(index)"
                          while :; do sleep 1; done

                    """
            }
            return text
        }

        /// Starts the 50-task run and waits until every task is ready.
        static func startFifty(_ sandbox: RunSandbox, launchedThrough prefix: [String] = []) throws -> LiveFlowrun {
            let workflow = try sandbox.write(workflow: fiftyTasksWithGrandchildren(sandbox))
            let flowrun = try LiveFlowrun(
                sandbox.arguments(workflow, []), environment: sandbox.environment, directory: sandbox.path,
                hardTimeout: .seconds(60), wrapper: prefix)
            let ready = poll(until: .seconds(30)) {
                ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.path)) ?? []).count { $0.hasPrefix("ready-") } == 50
            }
            try #require(ready, "the 50 tasks were not all ready within 30 s")
            return flowrun
        }

        /// Task processes still alive: carriers of the sandbox's token (but
        /// `engine`) and the escapees that wrote their pids. Zombies are dead.
        static func taskSurvivors(_ sandbox: RunSandbox, engine: pid_t) -> [String] {
            let hidden = (0..<50).compactMap { sandbox.pid(in: "hidden-\($0).pid") }
            return (sandbox.survivors().filter { $0 != engine } + hidden.filter(ProcessProbe.isAlive))
                .map { "\($0) \(ProcessProbe.commandLine(of: $0))" }
        }

        /// How many task processes are alive within `deadline` of now: polls /proc until none is.
        static func expectNoTaskLeft(
            _ sandbox: RunSandbox, engine: pid_t, within deadline: Duration = .seconds(2),
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            var left: [String] = []
            let cleared = poll(until: deadline, every: .milliseconds(10)) {
                left = taskSurvivors(sandbox, engine: engine)
                return left.isEmpty
            }
            #expect(cleared, "\(left.count) task processes still alive \(deadline) after flowrun was killed: \(left.prefix(10))",
                    sourceLocation: sourceLocation)
        }

        /// `kill -9` of the pid the shell knows: the engine, left alone, kills
        /// every task process, writes its record and exits.
        @Test func killingTheSupervisorWithSIGKILLLeavesNoTaskProcess() throws {
            let sandbox = try RunSandbox()
            let flowrun = try Self.startFifty(sandbox)
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            // 50 shells, 50 children, 50 setsid grandchildren, 10 escapees.
            #expect(Self.taskSurvivors(sandbox, engine: engine).count >= 160)
            kill(flowrun.pid, SIGKILL)
            Self.expectNoTaskLeft(sandbox, engine: engine)
            let ended = flowrun.finish()
            #expect(ended.signal == SIGKILL, "\(ended)")
            #expect(poll(until: .seconds(10)) { !ProcessProbe.isAlive(engine) }, "the engine \(engine) kept running without its supervisor")
            let record = try sandbox.record()
            #expect(Set(record.statuses.values) == ["cancelled"], "\(record.overview)")
            #expect(record.summary["run_id"] as? String == record.runID, "the engine wrote no summary")
        }

        /// `kill -9` of the engine: the supervisor, a child subreaper, kills
        /// every descendant left and exits 137.
        @Test func killingTheEngineWithSIGKILLLeavesNoTaskProcess() throws {
            let sandbox = try RunSandbox()
            let flowrun = try Self.startFifty(sandbox)
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            #expect(Self.taskSurvivors(sandbox, engine: engine).count >= 160)
            kill(engine, SIGKILL)
            Self.expectNoTaskLeft(sandbox, engine: engine)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 137, "\(ended)")
            #expect(ended.stderr.contains("the engine was killed by SIGKILL"), "\(ended)")
        }

        /// The OOM killer takes the engine (a memory cgroup with a limit; the
        /// engine made the likeliest victim with oom_score_adj 1000, as the
        /// largest process of a real run is), while a task allocates past the
        /// limit: nothing is left.
        @Test func anOutOfMemoryKillOfTheEngineLeavesNoTaskProcess() throws {
            let cgroup = try #require(MemoryCgroup(limitBytes: 256 << 20),
                                      "no writable memory cgroup (v2 /sys/fs/cgroup with +memory, or v1 /sys/fs/cgroup/memory): cannot set up an OOM kill")
            defer { cgroup.remove() }
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.fiftyTasksWithGrandchildren(sandbox) + """
                  hog:
                    run: |
                      touch "$SANDBOX/hog.ready"
                      until [ -e "$SANDBOX/allocate" ]; do sleep 0.01; done
                      x=$(head -c 2000000000 /dev/zero | tr '\\0' a)
                      echo "allocated ${#x}"

                """)
            let flowrun = try LiveFlowrun(
                sandbox.arguments(workflow, []), environment: sandbox.environment, directory: sandbox.path,
                hardTimeout: .seconds(90),
                wrapper: ["/bin/sh", "-c", "echo $$ > \(cgroup.path)/cgroup.procs && exec \"$@\"", "sh"])
            let ready = poll(until: .seconds(30)) {
                ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.path)) ?? []).count { $0.hasPrefix("ready-") } == 50
                    && sandbox.exists("hog.ready")
            }
            try #require(ready, "the tasks were not all ready within 30 s")
            let engine = try #require(flowrun.engine(), "no engine under the supervisor \(flowrun.pid)")
            #expect(ProcessProbe.text("/proc/\(engine)/cgroup")?.contains(cgroup.relativePath) == true, "flowrun is not in the cgroup")
            try #require(writeInPlace("1000", to: "/proc/\(engine)/oom_score_adj"), "cannot set the engine's oom_score_adj")
            try #require(FileManager.default.createFile(atPath: sandbox.file("allocate"), contents: nil))
            let engineDied = poll(until: .seconds(60), every: .milliseconds(2)) { !ProcessProbe.isAlive(engine) }
            try #require(engineDied, "the engine was never killed (OOM kills so far: \(cgroup.oomKills))")
            Self.expectNoTaskLeft(sandbox, engine: engine)
            let ended = flowrun.finish()
            #expect(cgroup.oomKills >= 1, "no OOM kill happened in the cgroup")
            #expect(ended.exitStatus == 137, "\(ended)")
            #expect(ended.stderr.contains("the engine was killed by SIGKILL"), "\(ended)")
        }

        static func tool(_ name: String) -> String? {
            for directory in ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"]
            where FileManager.default.isExecutableFile(atPath: directory + "/" + name) {
                return directory + "/" + name
            }
            return nil
        }
    }
}

/// A fresh memory cgroup with a limit: cgroup v2 (`memory.max`, under the
/// root, which may hold processes) or v1 (`memory.limit_in_bytes`, under
/// the test's own memory cgroup). Nil when neither can be made.
struct MemoryCgroup {
    let path: String
    /// The path as /proc/PID/cgroup shows it.
    let relativePath: String
    let isV2: Bool

    init?(limitBytes: Int) {
        let name = "flowrun-oom-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let manager = FileManager.default
        func write(_ text: String, _ file: String) -> Bool { writeInPlace(text, to: file) }
        let root = "/sys/fs/cgroup"
        if (ProcessProbe.text(root + "/cgroup.controllers") ?? "").split(separator: " ").contains(where: { $0.hasPrefix("memory") }) {
            // v2: a new cgroup next to ours, under the nearest ancestor that
            // hands the memory controller down (the root may, if asked; a
            // cgroup holding processes, like ours, cannot).
            let own = (ProcessProbe.text("/proc/self/cgroup") ?? "").split(separator: "\n")
                .first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) } ?? "/"
            var ancestors: [String] = []
            var current = own
            while current != "/" && !current.isEmpty {
                current = (current as NSString).deletingLastPathComponent
                ancestors.append(current)
            }
            if ancestors.last != "/" { ancestors.append("/") }
            _ = write("+memory", root + "/cgroup.subtree_control")
            for ancestor in ancestors {
                let base = ancestor == "/" ? "" : ancestor
                guard (ProcessProbe.text(root + base + "/cgroup.subtree_control") ?? "").contains("memory") else { continue }
                let path = root + base + "/" + name
                guard (try? manager.createDirectory(atPath: path, withIntermediateDirectories: false)) != nil else { continue }
                if write(String(limitBytes), path + "/memory.max") {
                    _ = write("0", path + "/memory.swap.max")
                    self.path = path
                    relativePath = base + "/" + name
                    isV2 = true
                    return
                }
                rmdir(path)
            }
        }
        // v1: "N:memory:/path" in /proc/self/cgroup.
        let own = (ProcessProbe.text("/proc/self/cgroup") ?? "").split(separator: "\n")
            .compactMap { line -> String? in
                let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
                return fields.count == 3 && fields[1].split(separator: ",").contains("memory") ? String(fields[2]) : nil
            }.first
        guard let own else { return nil }
        let parent = root + "/memory" + (own == "/" ? "" : own)
        let path = parent + "/" + name
        guard (try? manager.createDirectory(atPath: path, withIntermediateDirectories: false)) != nil else { return nil }
        guard write(String(limitBytes), path + "/memory.limit_in_bytes") else {
            rmdir(path)
            return nil
        }
        _ = write(String(limitBytes), path + "/memory.memsw.limit_in_bytes")
        self.path = path
        relativePath = (own == "/" ? "" : own) + "/" + name
        isV2 = false
    }

    /// OOM kills in the cgroup so far (v2 memory.events, v1 memory.oom_control).
    var oomKills: Int {
        let text = ProcessProbe.text(path + (isV2 ? "/memory.events" : "/memory.oom_control")) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("oom_kill ") {
            return Int(line.split(separator: " ")[1]) ?? 0
        }
        return 0
    }

    /// Removes it once empty (waits up to 5 s for its last processes to be reaped).
    func remove() {
        _ = poll(until: .seconds(5)) { rmdir(path) == 0 || errno == ENOENT }
    }
}

/// Writes `text` to an existing file as one write, without a temporary file
/// (for /proc and /sys, where `createFile`'s atomic replace fails).
func writeInPlace(_ text: String, to path: String) -> Bool {
    guard let handle = FileHandle(forWritingAtPath: path) else { return false }
    defer { try? handle.close() }
    return (try? handle.write(contentsOf: Data(text.utf8))) != nil
}

import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// The state read through one snapshot file (`StateSnapshot`): a run
    /// that finds `.flowrun/state` as the snapshot found it opens no task's
    /// state file; any new, replaced or removed state file changes the
    /// folder, and the files are read again. Seen with strace: which state
    /// files a run opened.
    @Suite struct IncrementalSnapshotTests {
        static let workflow = """
            tasks:
              a: { sources: [a.c], generates: [a.o], run: "cp a.c a.o" }
              b: { sources: [b.c], generates: [b.o], run: "cp b.c b.o" }
              link: { needs: [a, b], sources: [a.o, b.o], generates: [app], run: "cat a.o b.o > app" }
            """

        func project() throws -> (RunSandbox, String) {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.workflow)
            for name in ["a.c", "b.c"] { try "int \(name.first!);\n".write(toFile: sandbox.file(name), atomically: false, encoding: .utf8) }
            return (sandbox, workflow)
        }

        var state: (RunSandbox) -> String { { $0.file(".flowrun/state") } }

        /// One run under strace: its exit status, the tasks it started
        /// (from the console), the task state files it opened, and whether
        /// it opened a snapshot.
        func tracedRun(_ sandbox: RunSandbox, _ workflow: String, sourceLocation: SourceLocation = #_sourceLocation) throws
            -> (exitStatus: Int32?, upToDate: Int, stateFilesOpened: Int, snapshotsOpened: Int) {
            let strace = try RunSandbox.tool("strace")
            let trace = sandbox.file("trace-\(UUID().uuidString)")
            let outcome = try ChildProcess.run(
                executable: strace, arguments: ["-f", "-qq", "-e", "trace=open,openat,openat2", "-o", trace, try FlowrunBinary.path()]
                    + sandbox.arguments(workflow, []),
                environment: sandbox.environment.map { "\($0.key)=\($0.value)" } + ["PATH=/usr/bin:/bin"], directory: sandbox.path,
                stdoutPath: sandbox.file("stdout"), stderrPath: sandbox.file("stderr"), timeout: .seconds(60), launcher: nil)
            let stdout = sandbox.read("stdout") ?? ""
            #expect(outcome.exitStatus == 0, "\(stdout) \(sandbox.read("stderr") ?? "")", sourceLocation: sourceLocation)
            let upToDate = stdout.firstMatch(of: /\((\d+) up to date\)/).flatMap { Int($0.1) } ?? 0
            let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n")
            let stateFiles = lines.filter { $0.contains(/"[0-9a-f]{64}\.json"/) && !$0.contains("O_CREAT") }.count
            let snapshots = lines.filter { $0.contains(/"[0-9a-f]{64}"/) && !$0.contains("O_CREAT") && !$0.contains("ENOENT") }.count
            return (outcome.exitStatus, upToDate, stateFiles, snapshots)
        }

        /// Runs until a snapshot is written: the build, a run that keeps the
        /// stamps of the outputs the build made (settled by then: a state
        /// write), and a run with the state folder settled, which writes it.
        func snapshotted(_ sandbox: RunSandbox, _ workflow: String, checkingOne: Bool = true) throws {
            for round in 1...3 {
                RunEndToEndParallel.IncrementalStampTests().waitUntilSettled(state(sandbox))
                for name in ["a.o", "b.o", "app"] where FileManager.default.fileExists(atPath: sandbox.file(name)) {
                    RunEndToEndParallel.IncrementalStampTests().waitUntilSettled(sandbox.file(name))
                }
                let run = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment)
                #expect(run.exitStatus == 0, "round \(round): \(run)")
            }
            guard checkingOne else { return }
            let snapshots = try FileManager.default.contentsOfDirectory(atPath: state(sandbox) + "/snapshots")
            #expect(snapshots.count == 1, "snapshots: \(snapshots)")
        }

        @Test func aRunOfAnUnchangedStateOpensOneSnapshotAndNoStateFile() throws {
            let (sandbox, workflow) = try project()
            try snapshotted(sandbox, workflow)
            let run = try tracedRun(sandbox, workflow)
            #expect(run.upToDate == 3)
            #expect(run.stateFilesOpened == 0, "a run of an unchanged state opened \(run.stateFilesOpened) state files")
            #expect(run.snapshotsOpened == 1)
            // Without the snapshot: each of the three tasks' files.
            try FileManager.default.removeItem(atPath: state(sandbox) + "/snapshots")
            let without = try tracedRun(sandbox, workflow)
            #expect(without.upToDate == 3)
            #expect(without.stateFilesOpened == 3)
        }

        /// A state file removed, or one written by a run, changes the folder:
        /// the next run reads the files, and decides as they say.
        @Test func aStateFileRemovedOrRewrittenIsSeenByTheNextRun() throws {
            let (sandbox, workflow) = try project()
            try snapshotted(sandbox, workflow)
            let files = try FileManager.default.contentsOfDirectory(atPath: state(sandbox)).filter { $0.hasSuffix(".json") }
            #expect(files.count == 3)
            // Removed: which task it was is not known here; exactly one runs again, and what needs it.
            try FileManager.default.removeItem(atPath: state(sandbox) + "/" + files[0])
            let removed = try tracedRun(sandbox, workflow)
            #expect(removed.stateFilesOpened >= 1)
            #expect(removed.upToDate < 3, "a task whose state was removed was still up to date")
            // A source edited: its task runs (the check), and writes its state (the folder changes again).
            try "int a2;\n".write(toFile: sandbox.file("a.c"), atomically: false, encoding: .utf8)
            let edited = try tracedRun(sandbox, workflow)
            #expect(edited.upToDate < 3)
            #expect(try String(contentsOfFile: sandbox.file("app"), encoding: .utf8).contains("a2"))
            let again = try tracedRun(sandbox, workflow)
            #expect(again.upToDate == 3)
            #expect(again.stateFilesOpened == 3, "a run after state was written read \(again.stateFilesOpened) state files, not each")
        }

        /// A writer killed between making its temporary and renaming it
        /// (kill -9, a crash) leaves `KEY.tmp-HEX` behind, up to 32 MiB
        /// each; nothing else lists the folder, so they piled up, one a
        /// kill. The next snapshot written removes those older than a
        /// minute, and nothing else there.
        @Test func aSnapshotWrittenRemovesTemporariesAKilledWriterLeft() throws {
            let (sandbox, workflow) = try project()
            try snapshotted(sandbox, workflow)
            let folder = state(sandbox) + "/snapshots"
            let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first)
            let other = String(repeating: "ab", count: 32)
            let stale = [name + ".tmp-9f3c2a7d1e5b4c68", other + ".tmp-1"]
            let kept = [name + ".tmp-77aa", "notes.txt", other + ".tmp-XYZ"]
            for file in stale + kept { try "half a snapshot".write(toFile: folder + "/" + file, atomically: false, encoding: .utf8) }
            // The killed writers' an hour ago; `name.tmp-77aa` is a writer at work now.
            var old = [timeval(tv_sec: time(nil) - 3600, tv_usec: 0), timeval(tv_sec: time(nil) - 3600, tv_usec: 0)]
            for file in stale + ["notes.txt", other + ".tmp-XYZ"] { #expect(utimes(folder + "/" + file, &old) == 0) }
            // The next snapshot: the state changed (its file removed), read again, then settled.
            let files = try FileManager.default.contentsOfDirectory(atPath: state(sandbox)).filter { $0.hasSuffix(".json") }
            try FileManager.default.removeItem(atPath: state(sandbox) + "/" + files[0])
            try snapshotted(sandbox, workflow, checkingOne: false)
            let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
            #expect(left == Set([name] + kept), "left in snapshots/: \(left.sorted())")
        }

        /// A task that printed 120,000 lines keeps them in its state file,
        /// one `\\n` escape a line: reading them back (snapshot or file) was
        /// quadratic, 15 s and more for a run that starts nothing. Now a
        /// fraction of a second; the bound leaves a loaded machine room.
        @Test func aStateKeepingManyLinesOfStdoutReadsInLinearTime() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: """
                tasks:
                  report: { sources: [in.txt], run: "seq 1 120000" }
                """)
            try "x\n".write(toFile: sandbox.file("in.txt"), atomically: false, encoding: .utf8)
            let first = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment)
            #expect(first.exitStatus == 0, "\(first)")
            for round in 1...2 {
                RunEndToEndParallel.IncrementalStampTests().waitUntilSettled(state(sandbox))
                let again = try FlowrunBinary.run(
                    sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment, timeout: .seconds(60))
                #expect(again.exitStatus == 0, "round \(round): \(again)")
                #expect(again.stdout.contains("1 up to date"), "round \(round): \(again.stdout)")
                #expect(again.wallSeconds < 5, "round \(round): a no-op run took \(again.wallSeconds) s")
            }
        }

        /// Whether this machine lets the test loop-mount an ext2 image
        /// (128-byte inodes: times in whole seconds) in a mount namespace of its own.
        static let canMountExt2: Bool = {
            guard geteuid() == 0, let unshare = try? RunSandbox.tool("unshare"), let mkfs = try? RunSandbox.tool("mkfs.ext2"),
                  let scratch = try? TemporaryDirectory(prefix: "flowrun-ext2") else { return false }
            let script = "\"$0\" -q -F -I 128 \"$1/img\" 4096 && mkdir \"$1/mnt\" && \"$2\" -m sh -c 'mount -o loop \"$0/img\" \"$0/mnt\"' \"$1\""
            let outcome = try? ChildProcess.run(
                executable: "/bin/sh", arguments: ["-c", script, mkfs, scratch.path, unshare],
                environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], directory: "/",
                stdoutPath: "/dev/null", stderrPath: "/dev/null", timeout: .seconds(20), launcher: nil)
            return outcome?.exitStatus == 0
        }()

        /// On a file system that keeps whole seconds (ext2 here; FAT, ext3,
        /// some NFS servers), a clock set back into the second of the state
        /// folder's last change let a removed state file leave the folder's
        /// stamp as the snapshot held it: the task stayed up to date (seen
        /// with `date -s` by hand; a test does not set the clock). No
        /// snapshot is written or read there: every run reads the files.
        @Test(.enabled(if: canMountExt2)) func aStateFolderWithWholeSecondTimesIsReadFileByFile() throws {
            let folder = try TemporaryDirectory(prefix: "flowrun-ext2")
            let mkfs = try RunSandbox.tool("mkfs.ext2")
            let made = try ChildProcess.run(
                executable: mkfs, arguments: ["-q", "-F", "-I", "128", folder.path + "/img", "4096"], environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
                directory: folder.path, stdoutPath: "/dev/null", stderrPath: folder.path + "/mkfs.err", timeout: .seconds(20), launcher: nil)
            try #require(made.exitStatus == 0)
            #expect(mkdir(folder.path + "/mnt", 0o700) == 0)
            _ = try folder.write("tasks:\n  a: { sources: [a.c], run: \"echo built\" }\n", to: "wf.yaml")
            // In the namespace: the project copied onto the image, a build, then
            // three runs 2.2 s apart (the folder settled, as a snapshot needs);
            // prints the snapshots made and what the last run said.
            let script = """
                mount -o loop "$0/img" "$0/mnt" || exit 3
                cd "$0/mnt" && cp "$0/wf.yaml" . && echo 'int a;' > a.c || exit 4
                "$1" wf.yaml --output plain > /dev/null || exit 5
                for round in 1 2 3; do sleep 2.2; "$1" wf.yaml --output plain > "$0/last" || exit 6; done
                ls .flowrun/state/snapshots | wc -l
                """
            let outcome = try ChildProcess.run(
                executable: try RunSandbox.tool("unshare"), arguments: ["-m", "sh", "-c", script, folder.path, try FlowrunBinary.path()],
                environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], directory: folder.path,
                stdoutPath: folder.path + "/out", stderrPath: folder.path + "/err", timeout: .seconds(60), launcher: nil)
            let out = (try? String(contentsOfFile: folder.path + "/out", encoding: .utf8)) ?? ""
            let last = (try? String(contentsOfFile: folder.path + "/last", encoding: .utf8)) ?? ""
            #expect(outcome.exitStatus == 0, "\(out) \((try? String(contentsOfFile: folder.path + "/err", encoding: .utf8)) ?? "")")
            #expect(last.contains("1 up to date"), "\(last)")
            #expect(out.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "snapshots written on a whole-second file system: \(out)")
        }

        /// A run that writes state writes no snapshot (the folder changed
        /// under it); a snapshot at its name that is a link or a named pipe
        /// is not read, and the run decides from the files.
        @Test func aRunThatWritesStateOrFindsNoPlainSnapshotReadsTheFiles() throws {
            let (sandbox, workflow) = try project()
            let first = try FlowrunBinary.run(sandbox.arguments(workflow, []), in: sandbox.path, environment: sandbox.environment)
            #expect(first.exitStatus == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: state(sandbox) + "/snapshots") == [])
            try snapshotted(sandbox, workflow)
            let folder = state(sandbox) + "/snapshots"
            let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first)
            let copy = sandbox.file("snapshot-copy")
            try FileManager.default.moveItem(atPath: folder + "/" + name, toPath: copy)
            #expect(symlink(copy, folder + "/" + name) == 0)
            let linked = try tracedRun(sandbox, workflow)
            #expect(linked.upToDate == 3)
            #expect(linked.stateFilesOpened == 3)
            try FileManager.default.removeItem(atPath: folder + "/" + name)
            #expect(mkfifo(folder + "/" + name, 0o600) == 0)
            let piped = try tracedRun(sandbox, workflow)
            #expect(piped.upToDate == 3)
            #expect(piped.stateFilesOpened == 3)
        }
    }
}

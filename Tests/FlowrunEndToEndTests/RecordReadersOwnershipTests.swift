import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// SPEC §11, last bullets (issue 32): what flowrun reads obeys the rules
    /// of what it writes. No other local user can make you run their code,
    /// show you their run as yours, or push your records out. The victim is
    /// the test (root in CI, as a user whose records these are); the other
    /// user is uid 65534, through `setpriv`, in a shared sticky folder as
    /// /tmp is.
    @Suite struct RecordReadersOwnershipTests {
        typealias Privacy = RunEndToEndParallel.RunRecordPrivacyTests

        /// A run id dated in the year 2999: newer than any real run.
        static let plantedID = "29991231-235959-0123456789abcdef"

        /// The victim's workflow: a task that notes each time it ran, and fails.
        static let victimWorkflow = "tasks:\n  mine: {run: 'echo ran >> \"$SANDBOX/mine-runs\"; exit 1'}\n"

        /// As the other user: `evil.yaml` in `shared` (a task that touches
        /// `pwned` in the sandbox), and in `records` a run folder `id` whose
        /// `summary.json` names it (failed, so that resume would run it),
        /// plus `latest -> id`.
        static func plantRun(_ id: String = plantedID, in records: String, shared: String, sandbox: RunSandbox, latest: Bool = true) throws {
            let evil = shared + "/evil.yaml"
            let summary = #"{"run_id":"\#(id)","workflow":"evil","file":"\#(evil)","workflow_path":"\#(evil)","cwd":"\#(shared)","exit_code":1,"duration":1,"counts":{"failed":1},"tasks":["# + "\n"
                + #"{"name":"evil","status":"failed","exit_code":1}]}"# + "\n"
            try Privacy.asOtherUser("/bin/sh", "-c", """
                set -e
                [ -e '\(evil)' ] || printf 'tasks:\\n  evil: {run: "touch %s"}\\n' '\(sandbox.file("pwned"))' > '\(evil)'
                mkdir -m 755 '\(records)/\(id)'
                printf '%s' '\(summary)' > '\(records)/\(id)/summary.json'
                \(latest ? "ln -sfn '\(id)' '\(records)/latest'" : "true")
                """)
        }

        /// The victim when it must be an ordinary user (root may replace
        /// anyone's `latest` in a sticky folder): uid 65533, through `setpriv`.
        static let victimUser: Int32 = 65533

        /// `flowrun ARGUMENTS` as `victimUser`, in `directory`.
        static func asVictim(_ arguments: [String], in directory: String, _ sandbox: RunSandbox) throws -> FlowrunRun {
            let setpriv = try Privacy.tool("setpriv")
            let run = try Privacy.flowrun(
                wrappedIn: [setpriv, "--reuid=\(victimUser)", "--regid=\(victimUser)", "--clear-groups"],
                arguments, in: directory, environment: sandbox.environment)
            run.expectNoCrash()
            return run
        }

        /// `--log-dir` a shared sticky folder, two ordinary users: another
        /// user's `latest` and future-dated run folder are not the victim's
        /// latest run. The run says its `latest` could not be replaced;
        /// `show`, `runs` and `resume` take the victim's own run; naming the
        /// planted one is refused, saying whose it is; `logs -f` follows the
        /// victim's run while the other user holds a lock on theirs; the
        /// other user's task never runs.
        @Test func aRunAndLatestPlantedInASharedLogDirAreNeitherShownNorResumed() throws {
            let sandbox = try RunSandbox()
            try Privacy.shareWithOtherUser(sandbox)
            let shared = sandbox.file("shared")
            try Self.plantRun(in: shared, shared: shared, sandbox: sandbox)
            // Listable for the victim; a folder it may only pass through comes last.
            #expect(chmod(sandbox.path, 0o755) == 0)
            let home = sandbox.file("victim")
            try Privacy.makeFolder(home, mode: 0o700)
            #expect(chown(home, uid_t(Self.victimUser), gid_t(Self.victimUser)) == 0)
            let workflow = home + "/workflow.yaml"
            try "tasks:\n  mine: {run: 'echo ran; echo ran >> \(home)/mine-runs; exit 1'}\n".write(toFile: workflow, atomically: false, encoding: .utf8)
            #expect(chown(workflow, uid_t(Self.victimUser), gid_t(Self.victimUser)) == 0)
            func flowrun(_ arguments: [String]) throws -> FlowrunRun {
                try Self.asVictim(arguments + ["--log-dir", shared], in: home, sandbox)
            }
            let first = try flowrun([workflow, "--output", "plain"])
            #expect(first.exitStatus == 1, "\(first)")
            #expect(first.stderr.contains("warning: cannot point \(shared)/latest at this run: it belongs to uid 65534"), "the kept latest is said\n\(first)")
            let mine = try #require(runFolders(in: shared).filter { $0 != Self.plantedID }.first, "the victim's run folder")

            let show = try flowrun(["show"])
            #expect(show.exitStatus == 0 && show.stdout.contains(mine) && !show.stdout.contains(Self.plantedID), "show takes the victim's run\n\(show)")
            let runs = try flowrun(["runs", "--output", "json"])
            #expect(runs.stdout.contains(mine) && !runs.stdout.contains(Self.plantedID), "runs lists only the victim's\n\(runs)")
            // The other user holds their planted run's lock, as a live run does: `-f` must not wait on it.
            // Its own session, and waited for: the helper's group is killed as it exits.
            try Privacy.asOtherUser("/bin/sh", "-c", """
                setsid flock -n '\(shared)/\(Self.plantedID)' sh -c 'echo $$ > \(shared)/holder; exec sleep 60' >/dev/null 2>&1 &
                until [ -s '\(shared)/holder' ]; do sleep 0.01; done
                """)
            let holder = Int32(sandbox.read("shared/holder")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
            #expect(holder > 0, "the other user's lock holder")
            defer { if holder > 0 { kill(holder, SIGKILL) } }
            let logs = try flowrun(["logs", "mine", "-f"])
            #expect(logs.exitStatus == 0 && logs.stdout == "ran\n", "logs takes the victim's run\n\(logs)")

            let named = try flowrun(["show", Self.plantedID])
            #expect(named.exitStatus == 2, "\(named)")
            #expect(named.stderr.contains("run \(Self.plantedID) in \(shared) belongs to uid 65534, not to you (uid 65533)"), "\(named)")
            let resumeNamed = try flowrun(["resume", Self.plantedID, "--output", "plain"])
            #expect(resumeNamed.exitStatus == 2 && resumeNamed.stderr.contains("belongs to uid 65534"), "\(resumeNamed)")

            let resume = try flowrun(["resume", "--output", "plain"])
            #expect(resume.exitStatus == 1, "resume runs the victim's failed task again\n\(resume)")
            #expect(ProcessProbe.text(home + "/mine-runs") == "ran\nran\n", "\(resume)")
            #expect(!sandbox.exists("pwned"), "the other user's task ran as the victim\n\(resume)")

            // A folder on the way that the victim may pass through but not list (`0711`) is no obstacle.
            #expect(chmod(sandbox.path, 0o711) == 0)
            let passing = try flowrun(["runs"])
            #expect(passing.exitStatus == 0 && passing.stdout.contains(mine), "\(passing)")
        }

        /// Without `--log-dir`: links `.flowrun -> .` and `runs -> .` in a
        /// root-owned sticky folder, over a planted run. `resume` and `show`
        /// typed in the victim's own folder below find no record (the search
        /// stops at the shared folder); typed in the shared folder itself,
        /// readers and the writer refuse the other user's link, naming it.
        @Test func flowrunLinksPlantedAboveAreNeitherSearchedNorFollowed() throws {
            let sandbox = try RunSandbox()
            try Privacy.shareWithOtherUser(sandbox)
            let shared = sandbox.file("shared")
            try Self.plantRun(in: shared, shared: shared, sandbox: sandbox)
            try Privacy.asOtherUser("/bin/sh", "-c", "ln -s . '\(shared)/.flowrun' && ln -s . '\(shared)/runs'")
            try Privacy.makeFolder(shared + "/victim", mode: 0o755)
            try Privacy.makeFolder(shared + "/victim/sub", mode: 0o755)
            let below = shared + "/victim/sub"

            let resume = try FlowrunBinary.run(["resume", "--output", "plain"], in: below, environment: sandbox.environment)
            resume.expectNoCrash()
            #expect(resume.exitStatus == 2 && resume.stderr.contains("no runs recorded in \(below)/.flowrun/runs yet"), "\(resume)")
            #expect(!sandbox.exists("pwned"), "the other user's task ran as the victim\n\(resume)")
            let show = try FlowrunBinary.run(["show"], in: below, environment: sandbox.environment)
            #expect(show.exitStatus == 2 && !show.stdout.contains(Self.plantedID), "\(show)")

            for command in [["show"], ["resume"], ["runs"]] {
                let run = try FlowrunBinary.run(command, in: shared, environment: sandbox.environment)
                run.expectNoCrash()
                #expect(run.exitStatus == 2, "\(command)\n\(run)")
                #expect(run.stderr.contains("refusing to read run records under ") && run.stderr.contains(".flowrun: it is a link of uid 65534, not yours (uid 0)"), "\(command)\n\(run)")
                #expect(!run.stdout.contains(Self.plantedID), "\(command)\n\(run)")
            }
            #expect(!sandbox.exists("pwned"))
            // The writer: the record is not redirected into the shared folder (or wherever the link points).
            let workflow = try sandbox.write(workflow: "tasks:\n  ran: {run: 'touch \"$SANDBOX/task-ran\"'}\n")
            let write = try FlowrunBinary.run([workflow, "--output", "plain"], in: shared, environment: sandbox.environment)
            write.expectNoCrash()
            #expect(write.exitStatus == 2 && write.stderr.contains("refusing to write the run record under .flowrun: it is a link of uid 65534"), "\(write)")
            #expect(!sandbox.exists("task-ran"), "\(write)")
            #expect(runFolders(in: shared) == [Self.plantedID], "a record was written through the link")
        }

        /// The victim's own record, whose workflow file lies in a folder
        /// others may write without the sticky bit: the other user swaps the
        /// file for theirs after the run. `resume` refuses (exit 2) as the
        /// lookup would, saying why, and runs nothing: the folder first, then,
        /// with the folder closed again, whose the file is; with the file the
        /// victim's again, it resumes.
        @Test func resumeRefusesAWorkflowFileAnotherUserCouldHaveReplaced() throws {
            let sandbox = try RunSandbox()
            try Privacy.shareWithOtherUser(sandbox)
            let open = sandbox.file("shared/open")
            try Privacy.makeFolder(open, mode: 0o777)
            let workflow = open + "/workflow.yaml"
            try Self.victimWorkflow.write(toFile: workflow, atomically: false, encoding: .utf8)
            func flowrun(_ arguments: [String]) throws -> FlowrunRun {
                let run = try FlowrunBinary.run(arguments + ["--log-dir", sandbox.logDirectory], in: sandbox.path, environment: sandbox.environment)
                run.expectNoCrash()
                return run
            }
            #expect(try flowrun([workflow, "--output", "plain"]).exitStatus == 1)
            try Privacy.asOtherUser("/bin/sh", "-c", """
                rm -f '\(workflow)' && printf 'tasks:\\n  mine: {run: "touch %s"}\\n' '\(sandbox.file("pwned"))' > '\(workflow)'
                """)
            let swapped = try flowrun(["resume", "--output", "plain"])
            #expect(swapped.exitStatus == 2, "\(swapped)")
            #expect(swapped.stderr.contains("refusing its workflow file \(workflow): its folder \(open) is writable by others (mode 0777) without the sticky bit, so another user could run commands as you; to resume anyway, trust its folder (FLOWRUN_TRUSTED_DIRS=\(open))"), "\(swapped)")
            #expect(!sandbox.exists("pwned"), "the other user's file ran as the victim\n\(swapped)")

            #expect(chmod(open, 0o755) == 0)
            let theirs = try flowrun(["resume", "--output", "plain"])
            #expect(theirs.exitStatus == 2, "\(theirs)")
            #expect(theirs.stderr.contains("refusing its workflow file \(workflow): it belongs to \(WorkflowLookupTrustTests.userName(65534)), not to you"), "\(theirs)")
            #expect(!sandbox.exists("pwned"), "the other user's file ran as the victim\n\(theirs)")

            try Self.victimWorkflow.write(toFile: sandbox.file("mine.yaml"), atomically: false, encoding: .utf8)
            #expect(rename(sandbox.file("mine.yaml"), workflow) == 0)
            let resumed = try flowrun(["resume", "--output", "plain"])
            #expect(resumed.exitStatus == 1 && sandbox.lines("mine-runs").count == 2, "\(resumed)")
            #expect(!sandbox.exists("pwned"))
        }

        /// Issue 32, B2: resume applies the lookup's own trust rule
        /// (`WorkflowTrust`), the file's mode included. The victim's own
        /// workflow file, in the victim's own folder, made writable by others
        /// (`0666`) after the run: resume refuses it (it ran it), as the
        /// lookup does; with its folder in `FLOWRUN_TRUSTED_DIRS`, or the file
        /// `0644` again, it resumes.
        @Test func resumeRefusesAWorkflowFileOthersMayWrite() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.victimWorkflow)
            func flowrun(_ arguments: [String], environment: [String: String] = [:]) throws -> FlowrunRun {
                let run = try FlowrunBinary.run(arguments + ["--log-dir", sandbox.logDirectory, "--output", "plain"], in: sandbox.path,
                                                environment: sandbox.environment.merging(environment) { $1 })
                run.expectNoCrash()
                return run
            }
            #expect(try flowrun([workflow]).exitStatus == 1)
            #expect(chmod(workflow, 0o666) == 0)
            let refused = try flowrun(["resume"])
            #expect(refused.exitStatus == 2, "\(refused)")
            #expect(refused.stderr.contains("refusing its workflow file \(workflow): it is writable by others (mode 0666), so another user could run commands as you"),
                    "\(refused)")
            #expect(sandbox.lines("mine-runs").count == 1, "resume ran a file others may write\n\(refused)")

            let trusted = try flowrun(["resume"], environment: ["FLOWRUN_TRUSTED_DIRS": try WorkflowLookupTrustTests.real(sandbox.path)])
            #expect(trusted.exitStatus == 1 && sandbox.lines("mine-runs").count == 2, "\(trusted)")
            #expect(chmod(workflow, 0o644) == 0)
            let resumed = try flowrun(["resume"])
            #expect(resumed.exitStatus == 1 && sandbox.lines("mine-runs").count == 3, "\(resumed)")
        }

        /// Run folders another user planted in a shared `--log-dir`, dated in
        /// the future, do not count toward `--keep`: the victim's earlier
        /// records stay, and the planted ones are not touched either.
        @Test func plantedFoldersDoNotCountTowardKeep() throws {
            let sandbox = try RunSandbox()
            try Privacy.shareWithOtherUser(sandbox)
            let shared = sandbox.file("shared")
            let workflow = try sandbox.write(workflow: "tasks:\n  ok: {run: 'true'}\n")
            func run() throws {
                let run = try FlowrunBinary.run([workflow, "--log-dir", shared, "--keep", "3", "--output", "plain"], in: sandbox.path, environment: sandbox.environment)
                run.expectNoCrash()
                #expect(run.exitStatus == 0, "\(run)")
            }
            try run()
            try run()
            let planted = ["29991231-235959-0000000000000001", "29991231-235959-0000000000000002", "29991231-235959-0000000000000003"]
            for id in planted {
                try Self.plantRun(id, in: shared, shared: shared, sandbox: sandbox, latest: false)
            }
            try run()
            let mine = runFolders(in: shared).filter { !planted.contains($0) }
            #expect(mine.count == 3, "the victim's records left: \(mine)")
            #expect(Set(runFolders(in: shared)).isSuperset(of: planted), "a planted folder was removed")
        }

        /// A task with `sources:` under umask 0277 (issue 32, item 9): the
        /// run works, `.flowrun` and `.flowrun/state` are `0700`, and the
        /// next run under umask 022 works too; a `.flowrun` an older flowrun
        /// left `0500` gets its owner bits back.
        @Test func aSourcesTaskUnderUmask0277LeavesTheRecordUsable() throws {
            let sandbox = try RunSandbox()
            try "hello\n".write(toFile: sandbox.file("input.txt"), atomically: false, encoding: .utf8)
            let workflow = try sandbox.write(workflow: """
                tasks:
                  build: {sources: [input.txt], run: 'echo built >> "$SANDBOX/builds"'}
                """)
            func run(umask mask: String) throws -> FlowrunRun {
                let run = try Privacy.flowrun(
                    wrappedIn: ["/bin/sh", "-c", "umask \(mask); exec \"$0\" \"$@\""],
                    [workflow, "--output", "plain"], in: sandbox.path, environment: sandbox.environment)
                run.expectNoCrash()
                return run
            }
            func mode(_ name: String) -> mode_t {
                var info = stat()
                return stat(sandbox.file(name), &info) == 0 ? info.st_mode & 0o7777 : 0
            }
            let strict = try run(umask: "0277")
            #expect(strict.exitStatus == 0, "\(strict)")
            #expect(mode(".flowrun") == 0o700 && mode(".flowrun/state") == 0o700, "\(String(mode(".flowrun"), radix: 8)) \(String(mode(".flowrun/state"), radix: 8))")
            let loose = try run(umask: "022")
            #expect(loose.exitStatus == 0, "\(loose)")
            #expect(sandbox.lines("builds").count == 1, "the second run found the task up to date\n\(loose)")

            #expect(chmod(sandbox.file(".flowrun"), 0o500) == 0)
            let repaired = try run(umask: "022")
            #expect(repaired.exitStatus == 0, "\(repaired)")
            #expect(mode(".flowrun") == 0o700)
        }

        /// `resume` takes `run`'s options from one definition: a bound run
        /// enforces (`--max-parallel` at most 1,000,000) holds for it, and
        /// `--keep` prunes as it does for a run.
        @Test func resumeTakesRunsOptionsAndTheirBounds() throws {
            let sandbox = try RunSandbox()
            let workflow = try sandbox.write(workflow: Self.victimWorkflow)
            func flowrun(_ arguments: [String]) throws -> FlowrunRun {
                let run = try FlowrunBinary.run(arguments + ["--log-dir", sandbox.logDirectory], in: sandbox.path, environment: sandbox.environment)
                run.expectNoCrash()
                return run
            }
            for command in [[workflow], ["resume"]] {
                let run = try flowrun(command + ["--max-parallel", "5000000"])
                #expect(run.exitStatus == 2, "\(command)\n\(run)")
                #expect(run.stderr.contains("--max-parallel must be at most 1,000,000 (as max_parallel), found 5000000"), "\(command)\n\(run)")
            }
            #expect(try flowrun([workflow, "--output", "plain"]).exitStatus == 1)
            #expect(try flowrun([workflow, "--output", "plain"]).exitStatus == 1)
            let resume = try flowrun(["resume", "--keep", "1", "--output", "plain"])
            #expect(resume.exitStatus == 1, "\(resume)")
            #expect(runFolders(in: sandbox.logDirectory).count == 1, "resume --keep 1 keeps only its own record")
        }
    }
}

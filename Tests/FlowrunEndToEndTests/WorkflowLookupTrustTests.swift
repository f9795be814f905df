import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// SPEC §11, issue 32 item 2: the workflow lookup (`flowrun` with no FILE)
/// refuses a `flowrun.yaml` another user could have written, as git's
/// `safe.directory` does, in every command that looks the file up. The
/// victim is the test (root); the other user is uid 65534 through `setpriv`,
/// in a shared sticky folder as /tmp is.
@Suite struct WorkflowLookupTrustTests {
    typealias Privacy = RunEndToEndParallel.RunRecordPrivacyTests

    /// `shared/` (mode 1777, like /tmp) holding `flowrun.yaml`, and the
    /// victim's `shared/victim/project`, where the victim types `flowrun`.
    struct SharedFolder {
        let directory: TemporaryDirectory
        let shared: String
        let project: String
        /// Made by the workflow's task if it ever runs.
        var marker: String { directory.path + "/task-ran" }

        init() throws {
            directory = try TemporaryDirectory(prefix: "flowrun-trust")
            #expect(chmod(directory.path, 0o711) == 0)
            shared = try WorkflowLookupTrustTests.real(directory.path) + "/shared"
            try Privacy.makeFolder(shared, mode: 0o1777)
            project = shared + "/victim/project"
            try FileManager.default.createDirectory(atPath: project, withIntermediateDirectories: true)
        }

        var workflow: String { "tasks:\n  build: {run: 'touch \(marker)'}\n" }

        /// `shared/flowrun.yaml` as the other user writes it.
        func plantAsOtherUser() throws {
            let source = try directory.write(workflow, to: "source.yaml")
            try Privacy.asOtherUser("cp", source, shared + "/flowrun.yaml")
        }
    }

    static func real(_ path: String) throws -> String {
        try #require(realpath(path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        }, "realpath \(path)")
    }

    static func userName(_ uid: uid_t) -> String {
        getpwuid(uid).flatMap { $0.pointee.pw_name }.map { "user '\(String(cString: $0))' (uid \(uid))" } ?? "uid \(uid)"
    }

    static let lookingCommands: [[String]] = [["build"], [], ["--dry-run"], ["run", "build"], ["list"], ["validate"], ["graph"]]

    /// The other user's `shared/flowrun.yaml` above the victim's project:
    /// every command that looks the file up refuses it (exit 2), naming the
    /// file, its owner and both ways to run it anyway; nothing runs and
    /// nothing is printed on stdout.
    @Test(arguments: lookingCommands)
    func anotherUsersFileFoundByLookupIsRefused(arguments: [String]) throws {
        let folder = try SharedFolder()
        try folder.plantAsOtherUser()
        let run = try FlowrunBinary.run(arguments, in: folder.project)
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        let file = folder.shared + "/flowrun.yaml"
        #expect(run.stderr == """
            flowrun: refusing \(file), found by lookup: it belongs to \(Self.userName(65534)), not to you (\(Self.userName(geteuid()))), \
            so another user could run commands as you; to run it anyway, name it (flowrun \(file)) or trust its folder \
            (FLOWRUN_TRUSTED_DIRS=\(folder.shared))

            """, "\(run)")
        #expect(run.stdout.isEmpty, "\(run)")
        #expect(!FileManager.default.fileExists(atPath: folder.marker), "the other user's task ran")
        #expect(!FileManager.default.fileExists(atPath: folder.shared + "/.flowrun"), "a record was made beside the refused file")
    }

    /// Naming the file, or listing its folder (or `*`) in
    /// `FLOWRUN_TRUSTED_DIRS`, runs it; a list naming other folders does not.
    @Test func theExplicitPathOrATrustedFolderRunsIt() throws {
        let folder = try SharedFolder()
        try folder.plantAsOtherUser()
        let elsewhere = try FlowrunBinary.run(["build"], in: folder.project,
                                              environment: ["FLOWRUN_TRUSTED_DIRS": folder.project + ":relative/shared:" + folder.shared + "/victim"])
        #expect(elsewhere.exitStatus == 2 && elsewhere.stderr.contains("refusing"), "\(elsewhere)")
        for environment in [["FLOWRUN_TRUSTED_DIRS": "/nowhere:" + folder.shared], ["FLOWRUN_TRUSTED_DIRS": "*"]] {
            try? FileManager.default.removeItem(atPath: folder.marker)
            let run = try FlowrunBinary.run(["build", "--output", "plain"], in: folder.project, environment: environment)
            #expect(run.exitStatus == 0, "\(environment)\n\(run)")
            #expect(FileManager.default.fileExists(atPath: folder.marker), "\(run)")
        }
        try? FileManager.default.removeItem(atPath: folder.marker)
        let named = try FlowrunBinary.run(["../../flowrun.yaml", "build", "--output", "plain", "--log-dir", folder.project + "/records"],
                                          in: folder.project)
        #expect(named.exitStatus == 0, "\(named)")
        #expect(FileManager.default.fileExists(atPath: folder.marker), "\(named)")
    }

    /// Completion reads no file the lookup refuses: task names after
    /// `--only` come only from a trusted file. A word close to a subcommand
    /// (`lsit`) is not looked for in it either: the refusal says why nothing
    /// can run there.
    @Test func completionAndCommandSuggestionsDoNotReadARefusedFile() throws {
        let folder = try SharedFolder()
        try folder.plantAsOtherUser()
        #expect(try CompletionTests.complete(["run", "--only", ""], in: folder.project) == [])
        #expect(try CompletionTests.complete(["run", "--only", ""], in: folder.shared + "/victim") == [])
        let misspelt = try FlowrunBinary.run(["lsit"], in: folder.project)
        #expect(misspelt.exitStatus == 2, "\(misspelt)")
        #expect(misspelt.stderr.hasPrefix("flowrun: refusing \(folder.shared)/flowrun.yaml, found by lookup"), "\(misspelt)")
        #expect(!FileManager.default.fileExists(atPath: folder.marker), "\(misspelt)")
    }

    /// Issue 32, B1: the tester's attack. The victim's project holds
    /// `flowrun.yaml` (a `build` task) and a shared sticky `scratch/`; the
    /// other user plants a workflow file named `build` there. The victim's
    /// `flowrun build` in `scratch/` runs the project's target: a bare word
    /// is a target whenever a workflow is found by lookup, even beside a file
    /// of that name. `./build` names the file, and runs it.
    @Test func aBareWordIsATargetBesideAFileOfThatName() throws {
        let folder = try SharedFolder()
        let project = folder.shared + "/victim"
        let scratch = project + "/scratch"
        try Privacy.makeFolder(scratch, mode: 0o1777)
        try folder.directory.write("tasks:\n  build: {run: 'echo victim-build'}\n", to: "shared/victim/flowrun.yaml")
        let planted = try folder.directory.write(folder.workflow.replacingOccurrences(of: "build:", with: "x:"), to: "planted.yaml")
        try Privacy.asOtherUser("cp", planted, scratch + "/build")
        let run = try FlowrunBinary.run(["build", "--output", "plain", "--stream", "--log-dir", folder.directory.path + "/records"], in: scratch)
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stdout.contains("victim-build"), "the project's build ran\n\(run)")
        #expect(!FileManager.default.fileExists(atPath: folder.marker), "the other user's file ran as the workflow")
        // Named as a path, the file is what the user asked for (the other user's task, here).
        let named = try FlowrunBinary.run(["./build", "--output", "plain", "--log-dir", folder.directory.path + "/records"], in: scratch)
        #expect(named.exitStatus == 0 && FileManager.default.fileExists(atPath: folder.marker), "\(named)")
    }

    /// With no workflow to look up, a bare word naming a file is FILE, and
    /// passes the lookup's trust check first: the other user's `build` in a
    /// sticky folder is refused (exit 2, saying why and how to run it
    /// anyway); the victim's own `build` there runs, as before.
    @Test func aBareWordFileWithNothingToLookUpMustBeTrusted() throws {
        let folder = try SharedFolder()
        let scratch = folder.shared + "/scratch"
        try Privacy.makeFolder(scratch, mode: 0o1777)
        let planted = try folder.directory.write(folder.workflow, to: "planted.yaml")
        try Privacy.asOtherUser("cp", planted, scratch + "/build")
        let refused = try FlowrunBinary.run(["build", "--output", "plain", "--log-dir", folder.directory.path + "/records"], in: scratch)
        refused.expectNoCrash()
        #expect(refused.exitStatus == 2, "\(refused)")
        #expect(refused.stderr == """
            flowrun: refusing build, taken as the workflow file (a word naming a file, with no flowrun.yaml to look up): it belongs to \
            \(Self.userName(65534)), not to you (\(Self.userName(geteuid()))), so another user could run commands as you; to run it anyway, \
            name it as a path (flowrun ./build) or trust its folder (FLOWRUN_TRUSTED_DIRS=\(scratch))

            """, "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: folder.marker), "the other user's file ran")

        try folder.directory.write(folder.workflow, to: "shared/scratch/mine")
        let own = try FlowrunBinary.run(["mine", "--output", "plain", "--log-dir", folder.directory.path + "/records"], in: scratch)
        #expect(own.exitStatus == 0 && FileManager.default.fileExists(atPath: folder.marker), "\(own)")
    }

    /// What another user could change, short of owning the file.
    enum Writable: String, CaseIterable, CustomTestStringConvertible {
        case folderWritableByOthers, folderWritableByGroup, folderOfAnotherUser, fileWritableByOthers, linkToAFileInAFolderOthersMayWrite,
             linkOfAnotherUser
        var testDescription: String { rawValue }
    }

    /// A file of yours is refused too when another user could replace or
    /// change it: its folder is writable by others or a group without the
    /// sticky bit, or belongs to someone else; the file itself is writable
    /// by others; or it is a link into such a folder, or another user's link.
    @Test(arguments: Writable.allCases)
    func aFileAnotherUserCouldChangeIsRefused(_ writable: Writable) throws {
        let folder = try SharedFolder()
        let top = folder.shared + "/top"
        try Privacy.makeFolder(top, mode: 0o755)
        try FileManager.default.createDirectory(atPath: top + "/project", withIntermediateDirectories: true)
        let file = top + "/flowrun.yaml"
        let why: String
        switch writable {
        case .folderWritableByOthers:
            #expect(chmod(top, 0o777) == 0)
            why = "its folder \(top) is writable by others (mode 0777) without the sticky bit"
        case .folderWritableByGroup:
            #expect(chmod(top, 0o775) == 0)
            why = "its folder \(top) is writable by its group (mode 0775) without the sticky bit"
        case .folderOfAnotherUser:
            #expect(chown(top, 65534, 65534) == 0)
            why = "its folder \(top) belongs to \(Self.userName(65534)), not to you"
        case .fileWritableByOthers:
            why = "it is writable by others (mode 0666)"
        case .linkToAFileInAFolderOthersMayWrite:
            why = "the folder of the file it links to, \(folder.shared)/open, is writable by others (mode 0777) without the sticky bit"
        case .linkOfAnotherUser:
            // A sticky folder anyone may add to (as /tmp): their link to a file of yours in a folder of yours.
            #expect(chmod(top, 0o1777) == 0)
            why = "the link belongs to \(Self.userName(65534)), not to you"
        }
        if writable == .linkOfAnotherUser {
            let real = try folder.directory.write(folder.workflow, to: "real.yaml")
            #expect(symlink(real, file) == 0)
            #expect(lchown(file, 65534, 65534) == 0)
        } else if writable == .linkToAFileInAFolderOthersMayWrite {
            try Privacy.makeFolder(folder.shared + "/open", mode: 0o777)
            try folder.directory.write(folder.workflow, to: "shared/open/real.yaml")
            #expect(symlink(folder.shared + "/open/real.yaml", file) == 0)
        } else {
            try folder.directory.write(folder.workflow, to: "shared/top/flowrun.yaml")
            if writable == .fileWritableByOthers { #expect(chmod(file, 0o666) == 0) }
        }
        let run = try FlowrunBinary.run(["build"], in: top + "/project")
        run.expectNoCrash()
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.stderr.hasPrefix("flowrun: refusing \(file), found by lookup: \(why)"), "\(run)")
        #expect(!FileManager.default.fileExists(atPath: folder.marker), "the task ran")
    }

    /// Your own file in a sticky shared folder (like `/tmp/flowrun.yaml`)
    /// runs: nobody else can replace it there.
    @Test func yourOwnFileInAStickySharedFolderRuns() throws {
        let folder = try SharedFolder()
        try folder.directory.write(folder.workflow, to: "shared/flowrun.yaml")
        let run = try FlowrunBinary.run(["build", "--output", "plain", "--log-dir", folder.project + "/records"], in: folder.project)
        #expect(run.exitStatus == 0, "\(run)")
        #expect(FileManager.default.fileExists(atPath: folder.marker), "\(run)")
    }

    /// Fails the test unless uid 65534 can run the binary under test (its
    /// copy for any user) and, with `useradd`, unless users can be made: the
    /// tests that need another user run as root, as CI does.
    static func requireAnotherUser(useradd: Bool = false) throws {
        try #require(geteuid() == 0, "running flowrun as another user through setpriv needs root (CI runs as root)")
        let binary = try FlowrunBinary.pathForAnyUser()
        try Privacy.asOtherUser("test", "-x", binary)
        if useradd { try #require(FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd"), "the test needs useradd (package passwd)") }
    }

    /// A user who is not root trusts root's files (root could change theirs
    /// anyway) and their own; root's `flowrun.yaml` above another user's
    /// project runs for that user, and that user's own file runs too.
    @Test func anotherUserTrustsRootsFileAndTheirOwn() throws {
        try Self.requireAnotherUser()
        let folder = try SharedFolder()
        try folder.directory.write("tasks:\n  build: {run: 'true'}\n", to: "shared/flowrun.yaml")
        try Privacy.asOtherUser("mkdir", "-p", folder.shared + "/theirs/project")
        let outcome = try Self.asOtherUser(["validate"], in: folder.shared + "/theirs/project")
        #expect(outcome.status == 0, "\(outcome.stderr)")
        try Privacy.asOtherUser("sh", "-c", "printf 'tasks:\\n  mine: {run: \"true\"}\\n' > \(folder.shared)/theirs/flowrun.yaml")
        let own = try Self.asOtherUser(["list"], in: folder.shared + "/theirs/project")
        #expect(own.status == 0 && own.stdout.hasPrefix("mine"), "\(own.stderr)")
    }

    /// With umask 002 (Debian's and Ubuntu's default for a user whose group
    /// is their own), a user's folders are group-writable: that is nobody
    /// else when the group is the user's private one (named after them,
    /// their primary group, no other member), so their file runs. The same
    /// folder shared with the group `users` is refused. The user is made
    /// with `useradd --user-group` and removed after.
    @Test func aGroupWritableFolderOfYourOwnPrivateGroupIsTrusted() throws {
        try Self.requireAnotherUser(useradd: true)
        let name = "flowrun-t\(getpid() % 100_000)"
        try Self.tool("/usr/sbin/useradd", ["--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
        defer { _ = try? Self.tool("/usr/sbin/userdel", [name]) }
        let account = try #require(getpwnam(name)?.pointee)
        let folder = try SharedFolder()
        let top = folder.shared + "/top"
        try Privacy.makeFolder(top, mode: 0o775)
        try Privacy.makeFolder(top + "/project", mode: 0o775)
        let file = try folder.directory.write("tasks:\n  mine: {run: 'true'}\n", to: "shared/top/flowrun.yaml")
        #expect(chmod(file, 0o664) == 0)
        for path in [top, top + "/project", file] { #expect(chown(path, account.pw_uid, account.pw_gid) == 0) }
        let own = try Self.asOtherUser(["list"], in: top + "/project", uid: account.pw_uid, gid: account.pw_gid)
        #expect(own.status == 0 && own.stdout.hasPrefix("mine"), "\(own.stderr)")
        let users = try #require(getgrnam("users")?.pointee.gr_gid, "no group 'users'")
        #expect(chown(top, account.pw_uid, users) == 0)
        let shared = try Self.asOtherUser(["list"], in: top + "/project", uid: account.pw_uid, gid: account.pw_gid)
        #expect(shared.status == 2, "\(shared.stderr)")
        #expect(shared.stderr.hasPrefix("flowrun: refusing \(file), found by lookup: its folder \(top) is writable by its group (mode 0775)"),
                "\(shared.stderr)")
    }

    /// Runs a system tool as root; fails the test with its stderr unless it exits 0.
    static func tool(_ path: String, _ arguments: [String]) throws {
        let scratch = try TemporaryDirectory(prefix: "flowrun-tool")
        let outcome = try ChildProcess.run(
            executable: path, arguments: arguments, environment: ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], directory: "/",
            stdoutPath: scratch.path + "/out", stderrPath: scratch.path + "/err", timeout: .seconds(20), launcher: nil)
        try #require(outcome.exitStatus == 0, "\(path) \(arguments): \(ProcessProbe.text(scratch.path + "/err") ?? "")")
    }

    /// The built binary run as `uid` (65534 unless told) in `directory`.
    static func asOtherUser(_ arguments: [String], in directory: String, uid: uid_t = 65534, gid: gid_t = 65534) throws
        -> (status: Int32?, stdout: String, stderr: String) {
        let scratch = try TemporaryDirectory(prefix: "flowrun-other")
        #expect(chmod(scratch.path, 0o777) == 0)
        let outcome = try ChildProcess.run(
            executable: try RunSandbox.tool("setpriv"),
            arguments: ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", try FlowrunBinary.pathForAnyUser()] + arguments,
            environment: ["PATH=/usr/bin:/bin", "NO_COLOR=1"], directory: directory,
            stdoutPath: scratch.path + "/out", stderrPath: scratch.path + "/err", timeout: .seconds(20), launcher: nil)
        return (outcome.exitStatus, ProcessProbe.text(scratch.path + "/out") ?? "", ProcessProbe.text(scratch.path + "/err") ?? "")
    }
}

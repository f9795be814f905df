import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 32, B3 and B4: one rule for "your own private group"
/// (`OtherWriters`), held by the workflow lookup, `resume`, the search for
/// the record and the record's folders alike. Real users, made with
/// `useradd` and removed after; the flowrun under test runs as them through
/// `setpriv`.
@Suite struct OwnPrivateGroupTests {
    typealias Trust = WorkflowLookupTrustTests
    typealias Privacy = RunEndToEndParallel.RunRecordPrivacyTests

    /// A user made with `useradd` (`arguments` after the name's), removed when the test ends.
    final class User {
        let name: String
        let uid: uid_t
        let gid: gid_t
        private var removed = false

        init(_ name: String, _ arguments: [String]) throws {
            try Trust.tool("/usr/sbin/useradd", arguments + ["--no-create-home", "--shell", "/usr/sbin/nologin", name])
            self.name = name
            let account = try #require(getpwnam(name)?.pointee, "useradd made no \(name)")
            uid = account.pw_uid
            gid = account.pw_gid
        }

        func remove() throws {
            guard !removed else { return }
            removed = true
            try Trust.tool("/usr/sbin/userdel", [name])
        }

        deinit { if !removed { _ = try? Trust.tool("/usr/sbin/userdel", [name]) } }

        /// The built binary, as this user, in `directory`.
        func flowrun(_ arguments: [String], in directory: String) throws -> (status: Int32?, stdout: String, stderr: String) {
            try Trust.asOtherUser(arguments, in: directory, uid: uid, gid: gid)
        }
    }

    /// `shared/top` (`0775`, the user's and their group's, as umask 002
    /// makes it) holding `workflow` as `flowrun.yaml` (`0664`) and `src/` (`0775`).
    static func project(of user: User, _ workflow: String) throws -> (folder: Trust.SharedFolder, top: String) {
        let folder = try Trust.SharedFolder()
        let top = folder.shared + "/top"
        try Privacy.makeFolder(top, mode: 0o775)
        try Privacy.makeFolder(top + "/src", mode: 0o775)
        let file = try folder.directory.write(workflow, to: "shared/top/flowrun.yaml")
        #expect(chmod(file, 0o664) == 0)
        for path in [top, top + "/src", file] { #expect(chown(path, user.uid, user.gid) == 0) }
        return (folder, top)
    }

    /// B3: a group named after you, your primary one, with no member listed,
    /// is not yours alone when another account has it as its primary group
    /// (`useradd -g`): that user writes your group-writable folder. The
    /// lookup refuses the file there; once that user is gone, it runs.
    @Test func aGroupAnotherUserHasAsPrimaryIsNotYourOwn() throws {
        try Trust.requireAnotherUser(useradd: true)
        let tag = getpid() % 100_000
        let owner = try User("flowrun-o\(tag)", ["--user-group"])
        let sharer = try User("flowrun-s\(tag)", ["--no-user-group", "--gid", String(owner.gid)])
        // The sharer first: a group that is another account's primary one is not removed with its user.
        defer {
            try? sharer.remove()
            try? owner.remove()
        }
        #expect(sharer.gid == owner.gid)
        // The folder is held to the end: its temporary directory goes with it.
        let (folder, top) = try Self.project(of: owner, "tasks:\n  mine: {run: 'true'}\n")
        defer { withExtendedLifetime(folder) {} }
        let shared = try owner.flowrun(["list"], in: top + "/src")
        #expect(shared.status == 2, "\(shared)")
        #expect(shared.stderr.hasPrefix("flowrun: refusing \(top)/flowrun.yaml, found by lookup: its folder \(top) is writable by its group (mode 0775)"),
                "\(shared.stderr)")
        try sharer.remove()
        let own = try owner.flowrun(["list"], in: top + "/src")
        #expect(own.status == 0 && own.stdout.hasPrefix("mine"), "\(own)")
    }

    /// B4: under umask 002 the project folder is `0775`, its group the
    /// user's private one. The lookup runs the file there, and so, from
    /// `src/`, `runs` finds the record beside it, `resume` runs the failed
    /// task again, and a `--log-dir` in the project is written: one rule.
    /// Shared with the group `users`, the folder is refused, naming the group.
    @Test func yourOwnPrivateGroupsFoldersAreYoursForTheRecordAndResume() throws {
        try Trust.requireAnotherUser(useradd: true)
        let user = try User("flowrun-u\(getpid() % 100_000)", ["--user-group"])
        let (folder, top) = try Self.project(of: user, "tasks:\n  mine: {run: 'echo ran >> ran.txt; exit 1'}\n")
        defer { withExtendedLifetime(folder) {} }
        let src = top + "/src"
        let first = try user.flowrun(["--output", "plain"], in: src)
        #expect(first.status == 1, "\(first)")
        let runs = try user.flowrun(["runs"], in: src)
        #expect(runs.status == 0 && !runs.stdout.isEmpty, "runs from src/ finds the record\n\(runs)")
        let resume = try user.flowrun(["resume", "--output", "plain"], in: src)
        #expect(resume.status == 1, "\(resume)")
        #expect(ProcessProbe.text(top + "/ran.txt") == "ran\nran\n", "resume ran the failed task again\n\(resume)")
        let logged = try user.flowrun(["--output", "plain", "--log-dir", top + "/records"], in: src)
        #expect(logged.status == 1 && FileManager.default.fileExists(atPath: top + "/records/latest"), "\(logged)")

        let users = try #require(getgrnam("users")?.pointee.gr_gid, "no group 'users'")
        #expect(chown(top + "/records", user.uid, users) == 0 && chmod(top + "/records", 0o770) == 0)
        let refused = try user.flowrun(["runs", "--log-dir", top + "/records"], in: src)
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("refusing to read run records under \(top)/records: it is writable by its group (mode 0770)"), "\(refused)")
    }
}

import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 32 item 3 (SECURITY.md): files flowrun writes at a path the user
/// named (`show --trace`, `--timeline`, `export -o`) are made as a random
/// `O_EXCL|O_NOFOLLOW` temporary file beside the path, written whole,
/// `fsync`ed and renamed into place: links another user plants in a shared
/// folder are never written through, the mode follows the umask, and a
/// write that fails leaves the old file as it was.
@Suite struct SafeFileWriteTests {
    typealias Privacy = RunEndToEndParallel.RunRecordPrivacyTests

    /// A recorded run, a private `home/` with the victim's files, and a
    /// shared sticky folder (as /tmp is) the other user (uid 65534) can plant in.
    struct Setup {
        let directory: TemporaryDirectory
        let home: String
        let shared: String
        var bashrc: String { home + "/.bashrc" }
        var secret: String { home + "/secret.json" }
        var profile: String { home + "/.profile" }
        static let bashrcText = "export PATH=$HOME/bin:$PATH # the victim's own\n"
        static let secretText = "{\"token\": \"victim's\"}\n"

        init() throws {
            directory = try TemporaryDirectory(prefix: "flowrun-safe-write")
            #expect(chmod(directory.path, 0o711) == 0)
            try directory.write(WriteFailureTests.workflow, to: "flowrun.yaml")
            let run = try FlowrunBinary.run(["--output", "plain"], in: directory.path)
            #expect(run.exitStatus == 0, "\(run)")
            home = directory.path + "/home"
            shared = directory.path + "/shared"
            try Privacy.makeFolder(home, mode: 0o700)
            try Privacy.makeFolder(shared, mode: 0o1777)
            try directory.write(Self.bashrcText, to: "home/.bashrc")
            try directory.write(Self.secretText, to: "home/secret.json")
            try directory.write(Self.bashrcText, to: "home/.profile")
        }

        /// A link at `name` in the shared folder to `target`, owned by the other user.
        func plant(_ name: String, to target: String) throws {
            let path = shared + "/" + name
            try #require(symlink(target, path) == 0, "symlink \(path): \(String(cString: strerror(errno)))")
            try #require(lchown(path, 65534, 65534) == 0, "lchown \(path): \(String(cString: strerror(errno)))")
        }

        func expectVictimsFilesUntouched(sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(ProcessProbe.text(bashrc) == Self.bashrcText, "~/.bashrc was written through a link", sourceLocation: sourceLocation)
            #expect(ProcessProbe.text(secret) == Self.secretText, "secret.json was written through a link", sourceLocation: sourceLocation)
            #expect(ProcessProbe.text(profile) == Self.bashrcText, "~/.profile was written through a link", sourceLocation: sourceLocation)
        }
    }

    /// The attack of the report: the other user plants links at the files'
    /// names and at every temporary name flowrun would have used (`NAME.tmp-PID`
    /// for the next few thousand pids) pointing at the victim's files (it
    /// put the SVG in `~/.bashrc`, and `export -o` wrote `~/.profile`). The
    /// victim's files stay as they were; each named path ends up a plain file
    /// of the victim's holding what was asked for; no temporary file is left.
    @Test func linksPlantedInASharedFolderAreNeverWrittenThrough() throws {
        let setup = try Setup()
        let names = ["trace.json", "run.svg", "argo.yaml"]
        // The names themselves lead to secret.json and ~/.profile; every temporary name to ~/.bashrc.
        try setup.plant("trace.json", to: setup.secret)
        try setup.plant("run.svg", to: setup.secret)
        try setup.plant("argo.yaml", to: setup.profile)
        let lastPid = Int(ProcessProbe.text("/proc/sys/kernel/ns_last_pid")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        try #require(lastPid > 0, "no /proc/sys/kernel/ns_last_pid")
        for pid in lastPid + 1...lastPid + 3000 {
            for name in names { try setup.plant("\(name).tmp-\(pid)", to: setup.bashrc) }
        }
        let planted = Set(try FileManager.default.contentsOfDirectory(atPath: setup.shared))

        let shown = try FlowrunBinary.run(["show", "--trace", setup.shared + "/trace.json", "--timeline", setup.shared + "/run.svg"],
                                          in: setup.directory.path)
        shown.expectNoCrash()
        #expect(shown.exitStatus == 0 && shown.stderr.isEmpty, "\(shown)")
        let exported = try FlowrunBinary.run(["export", "flowrun.yaml", "--to", "argo", "-o", setup.shared + "/argo.yaml"],
                                             in: setup.directory.path)
        #expect(exported.exitStatus == 0 && exported.stderr.isEmpty, "\(exported)")

        setup.expectVictimsFilesUntouched()
        for name in names {
            var info = stat()
            #expect(lstat(setup.shared + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_uid == geteuid(),
                    "\(name) is not a plain file of the victim's")
        }
        #expect(ProcessProbe.text(setup.shared + "/trace.json")?.hasPrefix("{") == true)
        #expect(ProcessProbe.text(setup.shared + "/run.svg")?.contains("<svg") == true)
        #expect(ProcessProbe.text(setup.shared + "/argo.yaml")?.contains("kind: Workflow") == true)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: setup.shared)).subtracting(planted)
        #expect(left.isEmpty, "temporary files left: \(left.sorted())")
    }

    /// A file someone else owns in a sticky shared folder is not replaced
    /// (the rename fails): flowrun run by another user says so, exit 1.
    @Test func anotherUsersFileInAStickyFolderIsNotReplaced() throws {
        try WorkflowLookupTrustTests.requireAnotherUser()
        let setup = try Setup()
        try setup.directory.write(Setup.secretText, to: "shared/argo.yaml")
        let outcome = try Self.asOtherUser(["export", setup.directory.path + "/flowrun.yaml", "--to", "argo", "-o", setup.shared + "/argo.yaml"])
        #expect(outcome.status == 1, "\(outcome.stderr)")
        #expect(outcome.stderr == "flowrun: cannot write \(setup.shared)/argo.yaml: Operation not permitted\n")
        #expect(ProcessProbe.text(setup.shared + "/argo.yaml") == Setup.secretText)
        let left = try FileManager.default.contentsOfDirectory(atPath: setup.shared).filter { $0 != "argo.yaml" }
        #expect(left.isEmpty, "temporary files left: \(left)")
    }

    /// Each new file's mode is `0666` less the umask, as any new file's
    /// (it was always `0644`), the replaced file's included.
    @Test(arguments: [0o022, 0o002, 0o077, 0o027] as [Int])
    func theModeFollowsTheUmask(umask mask: Int) throws {
        let setup = try Setup()
        try setup.directory.write("old\n", to: "shared/argo.yaml")
        #expect(chmod(setup.shared + "/argo.yaml", 0o600) == 0)
        let umask = ["/bin/sh", "-c", "umask \(String(mask, radix: 8)); exec \"$0\" \"$@\""]
        for arguments in [["show", "--trace", setup.shared + "/trace.json", "--timeline", setup.shared + "/run.svg"],
                          ["export", "flowrun.yaml", "--to", "argo", "-o", setup.shared + "/argo.yaml"]] {
            let run = try WriteFailureTests.flowrun(arguments, stdout: "/dev/null", in: setup.directory.path, wrappedIn: umask)
            #expect(run.exitStatus == 0 && run.stderr.isEmpty, "\(run)")
        }
        for name in ["trace.json", "run.svg", "argo.yaml"] {
            var info = stat()
            #expect(stat(setup.shared + "/" + name, &info) == 0)
            #expect(Int(info.st_mode & 0o7777) == 0o666 & ~mask,
                    "\(name) is \(String(info.st_mode & 0o7777, radix: 8)) under umask \(String(mask, radix: 8))")
        }
    }

    /// A write that fails (here the file size limit, SIGXFSZ ignored) exits
    /// 1 naming the file and the reason, and leaves the file that was there
    /// whole and no temporary file (it was cut and half written, exit 0).
    @Test func aWriteThatFailsLeavesTheOldFileAndNoTemporary() throws {
        let setup = try Setup()
        try setup.directory.write("old manifest\n", to: "shared/argo.yaml")
        try setup.directory.write("old trace\n", to: "shared/trace.json")
        let limited = [try RunSandbox.tool("prlimit"), "--fsize=200", "/bin/sh", "-c", "trap '' XFSZ; exec \"$0\" \"$@\""]
        for (arguments, path) in [(["export", "flowrun.yaml", "--to", "argo", "-o", setup.shared + "/argo.yaml"], setup.shared + "/argo.yaml"),
                                  (["show", "--trace", setup.shared + "/trace.json"], setup.shared + "/trace.json")] {
            let run = try WriteFailureTests.flowrun(arguments, stdout: "/dev/null", in: setup.directory.path, wrappedIn: limited)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            #expect(run.stderr == "flowrun: cannot write \(path): File too large\n", "\(run)")
        }
        #expect(ProcessProbe.text(setup.shared + "/argo.yaml") == "old manifest\n")
        #expect(ProcessProbe.text(setup.shared + "/trace.json") == "old trace\n")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: setup.shared)) == ["argo.yaml", "trace.json"])
    }

    /// A device or a pipe is written where it is, as `>` would: `-o
    /// /dev/null` leaves /dev/null a device, `-o /dev/stdout` reaches stdout.
    @Test func devicesAndStdoutAreWrittenInPlace() throws {
        let setup = try Setup()
        let toNull = try FlowrunBinary.run(["export", "flowrun.yaml", "--to", "argo", "-o", "/dev/null"], in: setup.directory.path)
        #expect(toNull.exitStatus == 0 && toNull.stderr.isEmpty, "\(toNull)")
        var info = stat()
        #expect(lstat("/dev/null", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR, "/dev/null must still be the device")
        #expect(try FileManager.default.contentsOfDirectory(atPath: "/dev").filter { $0.contains(".tmp-") }.isEmpty)
        let toStdout = try FlowrunBinary.run(["export", "flowrun.yaml", "--to", "argo", "-o", "/dev/stdout"], in: setup.directory.path)
        #expect(toStdout.exitStatus == 0 && toStdout.stdout.contains("kind: Workflow"), "\(toStdout)")
        #expect(lstat("/dev/stdout", &info) == 0 && info.st_mode & S_IFMT == S_IFLNK, "/dev/stdout must still be the link")
    }

    /// Issue 32, B7: a name of 62 emoji (248 bytes, 253 with `.yaml`,
    /// within NAME_MAX) is written: the temporary name beside it keeps at
    /// most 64 bytes of it, cut on a character's edge (64 characters were
    /// 250 bytes, and the temporary's name too long for the file system).
    @Test func aLongMultiByteNameIsWritten() throws {
        let setup = try Setup()
        let stem = String(repeating: "\u{1F600}", count: 62)
        for (arguments, name, text) in [(["export", "flowrun.yaml", "--to", "argo", "-o", setup.shared + "/" + stem + ".yaml"], stem + ".yaml", "kind: Workflow"),
                                        (["show", "--trace", setup.shared + "/" + stem + ".json"], stem + ".json", "{")] {
            #expect(name.utf8.count <= 255)
            let run = try FlowrunBinary.run(arguments, in: setup.directory.path)
            run.expectNoCrash()
            #expect(run.exitStatus == 0 && run.stderr.isEmpty, "\(run)")
            #expect(ProcessProbe.text(setup.shared + "/" + name)?.contains(text) == true, "\(name) was not written")
        }
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: setup.shared)) == [stem + ".yaml", stem + ".json"], "temporary files left")
    }

    /// The built binary run as uid 65534 in `/`.
    static func asOtherUser(_ arguments: [String]) throws -> (status: Int32?, stderr: String) {
        let outcome = try WorkflowLookupTrustTests.asOtherUser(arguments, in: "/")
        return (outcome.status, outcome.stderr)
    }
}

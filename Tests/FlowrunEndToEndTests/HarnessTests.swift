import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The measuring harness itself: the numbers the other suites quote are
/// only worth something if these hold.
@Suite struct HarnessTests {
    /// Opening a FIFO nobody writes to blocks forever: a real hang, which the
    /// timeout must turn into a failure within moments.
    @Test func aHangIsKilledAtTheTimeout() throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.path + "/never-written"
        #expect(mkfifo(fifo, 0o600) == 0)
        let run = try FlowrunBinary.run(["validate", fifo], timeout: .milliseconds(500))
        #expect(run.timedOut, "\(run)")
        #expect(run.exitStatus == nil, "\(run)")
        #expect(run.crashEvidence != nil)
        #expect(run.wallSeconds < 5, "\(run)")
    }

    /// The peak RSS is the child's own, not the test runner's: Linux would
    /// otherwise hand a child spawned from this process this process's peak.
    @Test func peakRSSIsTheChildsOwn() throws {
        var ballast = [UInt8](repeating: 0, count: 256 << 20)
        for index in stride(from: 0, to: ballast.count, by: 4096) { ballast[index] = 1 }
        let directory = try TemporaryDirectory()
        let file = try directory.write("tasks:\n  a: {run: x}\n", to: "small.yaml")
        let run = try FlowrunBinary.run(["validate", file])
        withExtendedLifetime(ballast) {}
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.peakRSSIsExact, "no C compiler to build the RSS launcher; RSS figures include the test runner")
        #expect(run.peakRSSMegabytes > 1 && run.peakRSSMegabytes < 200, "\(run)")
    }

    /// The dry-run test's "nobody connected" is only meaningful if a
    /// connection would be seen.
    @Test func theListenerSeesAConnection() throws {
        let listener = try TCPListener()
        #expect(!listener.hasPendingConnection(waiting: .milliseconds(50)))
        #if canImport(Glibc)
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let client = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        defer { close(client) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = listener.port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        #expect(listener.hasPendingConnection(waiting: .milliseconds(500)))
    }

    /// Megabytes on stdout and stderr at once cannot deadlock the harness.
    @Test func largeOutputOnBothStreamsIsCapturedWhole() throws {
        let directory = try TemporaryDirectory()
        let valid = try directory.write("tasks:\n" + (0..<5000).map { "  t\($0): {run: \"echo \($0)\"}\n" }.joined(), to: "valid.yaml")
        let invalid = try directory.write("tasks:\n" + (0..<5000).map { "  t\($0): {run: x, retries: -1}\n" }.joined(), to: "invalid.yaml")
        let plan = try FlowrunBinary.run([valid, "--dry-run"], timeout: .seconds(120))
        #expect(plan.exitStatus == 0, "\(plan)")
        #expect(plan.stdout.utf8.count > 200_000 && plan.stdout.contains("t4999"), "\(plan)")
        // Each file reports its first 200 problems and a count of the rest.
        // 25 files of 5,000 tasks: more than the default timeout on a loaded machine; no timing is measured here.
        let errors = try FlowrunBinary.run(["validate"] + Array(repeating: invalid, count: 25), timeout: .seconds(180))
        #expect(errors.exitStatus == 2, "\(errors)")
        #expect(errors.diagnostics.count == 25 * 201, "\(errors)")
        #expect(errors.stderr.contains("4800 more problems not shown"), "\(errors)")
    }

    /// A child starts with stdin, stdout and stderr only: a descriptor the
    /// runner holds without close-on-exec (another test's, at that moment)
    /// does not count against the child's `ulimit -n`.
    @Test func aChildGetsNoDescriptorOfTheRunner() throws {
        let leaked = open("/dev/null", O_RDONLY)  // no O_CLOEXEC, as a careless neighbour would
        defer { close(leaked) }
        try #require(leaked > 3, "descriptor \(leaked): 3 is ls's own")
        let directory = try TemporaryDirectory()
        let outcome = try ChildProcess.run(
            executable: try RunSandbox.tool("ls"), arguments: ["/proc/self/fd"], environment: [],
            stdoutPath: directory.path + "/out", stderrPath: directory.path + "/err", timeout: .seconds(30), launcher: nil)
        let listed = (try? String(contentsOfFile: directory.path + "/out", encoding: .utf8)) ?? ""
        #expect(outcome.exitStatus == 0, "\(outcome)")
        // ls's own listing: 0, 1, 2 and the folder it reads.
        #expect(listed.split(separator: "\n") == ["0", "1", "2", "3"], "the child holds \(listed.split(separator: "\n")), the runner leaked \(leaked)")
    }
}

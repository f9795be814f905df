import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds the `flowrun` executable under test and runs it the way a user
/// does, measuring each run.
///
/// The binary is `$FLOWRUN_BINARY` when set (CI points it at the release
/// build: `FLOWRUN_BINARY=.build/release/flowrun swift test`), else the
/// `flowrun` next to this test bundle in the build products directory, so a
/// plain `swift test` (any `--scratch-path`) tests what it just built.
///
/// Each run is measured by `ChildProcess`: exit status or signal, wall time,
/// and the run's own peak RSS (through `PeakRSSLauncher`).
///
/// ```swift
/// let run = try FlowrunBinary.run(["validate", path])
/// #expect(run.exitStatus == 2)
/// ```
enum FlowrunBinary {
    /// Every run is killed after this long, so a hang fails the test instead of CI.
    static let defaultTimeout: Duration = .seconds(20)

    /// The absolute path of the binary under test.
    static func path() throws(FlowrunBinaryError) -> String {
        try located.get()
    }

    /// A copy of the binary that any local user can run, for the tests that
    /// run flowrun as another user through `setpriv`: the binary under test
    /// may sit below a folder only its owner can search (CI installs it into
    /// a `mktemp -d` folder, mode 0700; a clone may live under `/root`). The
    /// copy is made once per test process in a fresh folder of mode 0755
    /// under /tmp and removed when the process exits.
    static func pathForAnyUser() throws -> String {
        try copiedForAnyUser.get()
    }

    private static let copiedForAnyUser: Result<String, FlowrunBinaryError> = {
        do {
            let original = try path()
            var template = Array("/tmp/flowrun-any-user.XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else {
                return .failure(FlowrunBinaryError("mkdtemp under /tmp: \(String(cString: strerror(errno)))"))
            }
            let folder = String(cString: made)
            let copy = folder + "/flowrun"
            try FileManager.default.copyItem(atPath: original, toPath: copy)
            guard chmod(folder, 0o755) == 0, chmod(copy, 0o755) == 0 else {
                return .failure(FlowrunBinaryError("chmod \(copy): \(String(cString: strerror(errno)))"))
            }
            copiedFolderToRemove.withLock { $0 = folder }
            atexit {
                copiedFolderToRemove.withLock { folder in
                    if let folder { try? FileManager.default.removeItem(atPath: folder) }
                }
            }
            return .success(copy)
        } catch let error as FlowrunBinaryError {
            return .failure(error)
        } catch {
            return .failure(FlowrunBinaryError("cannot copy the binary under test for another user: \(error)"))
        }
    }()

    private static let copiedFolderToRemove = Mutex<String?>(nil)

    /// Runs the binary with `arguments`, stdin `/dev/null`, stdout and stderr
    /// captured through files (no pipe can fill up and deadlock), and returns
    /// once it exited or was killed at `timeout`. With `stderrOnTerminal`,
    /// stderr is a pseudo-terminal instead (keep that output under 4 KiB).
    static func run(
        _ arguments: [String],
        in directory: String? = nil,
        environment overrides: [String: String] = [:],
        timeout: Duration = defaultTimeout,
        stderrOnTerminal: Bool = false
    ) throws -> FlowrunRun {
        let binary = try path()
        let scratch = try TemporaryDirectory(prefix: "flowrun-run")
        let stdoutPath = scratch.path + "/stdout"
        let terminal = stderrOnTerminal ? try PseudoTerminal() : nil
        let stderrPath = terminal?.devicePath ?? scratch.path + "/stderr"
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment.merge(overrides) { _, override in override }

        let outcome = try ChildProcess.run(
            executable: binary,
            arguments: arguments,
            environment: environment.map { "\($0.key)=\($0.value)" },
            directory: directory,
            stdoutPath: stdoutPath,
            stderrPath: stderrPath,
            timeout: timeout,
            launcher: PeakRSSLauncher.path)

        return FlowrunRun(
            arguments: arguments,
            stdout: Self.text(at: stdoutPath),
            stderr: terminal.map { $0.drain().replacingOccurrences(of: "\r\n", with: "\n") } ?? Self.text(at: stderrPath),
            exitStatus: outcome.exitStatus,
            signal: outcome.signal,
            timedOut: outcome.timedOut,
            wallSeconds: outcome.wallSeconds,
            peakRSSBytes: outcome.peakRSSBytes,
            peakRSSIsExact: outcome.peakRSSIsExact)
    }

    private static func text(at path: String) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Looked up once per test process.
    private static let located: Result<String, FlowrunBinaryError> = {
        if let configured = ProcessInfo.processInfo.environment["FLOWRUN_BINARY"], !configured.isEmpty {
            let absolute = configured.hasPrefix("/") ? configured : FileManager.default.currentDirectoryPath + "/" + configured
            guard isExecutableFile(absolute) else {
                return .failure(FlowrunBinaryError("FLOWRUN_BINARY=\(configured) is not an executable file (build it with `swift build -c release`)"))
            }
            return .success(absolute)
        }
        guard let testExecutable = testBundleExecutable() else {
            return .failure(FlowrunBinaryError("cannot tell where the test bundle is; set FLOWRUN_BINARY to the flowrun executable to test"))
        }
        // Linux: PRODUCTS/flowrunPackageTests.xctest is the executable itself.
        // Darwin: PRODUCTS/flowrunPackageTests.xctest/Contents/MacOS/flowrunPackageTests.
        var directory = (testExecutable as NSString).deletingLastPathComponent
        var searched: [String] = []
        for _ in 0..<4 {
            let candidate = directory + "/flowrun"
            searched.append(candidate)
            if isExecutableFile(candidate) { return .success(candidate) }
            directory = (directory as NSString).deletingLastPathComponent
        }
        return .failure(FlowrunBinaryError(
            "no flowrun executable next to the test bundle (looked at \(searched.joined(separator: ", "))); "
                + "run `swift build` with the same --scratch-path first, or set FLOWRUN_BINARY"))
    }()

    private static func testBundleExecutable() -> String? {
        #if os(Linux)
        if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return resolved }
        #endif
        if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
            return bundle.bundlePath + "/Contents/MacOS/" + ((bundle.bundlePath as NSString).lastPathComponent as NSString).deletingPathExtension
        }
        return Bundle.main.executablePath
    }

    private static func isExecutableFile(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            && !isDirectory.boolValue && FileManager.default.isExecutableFile(atPath: path)
    }
}

/// Why the binary under test could not be found or started.
struct FlowrunBinaryError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What one run of `flowrun` did: its output, how it ended, and what it cost.
struct FlowrunRun: Sendable, CustomStringConvertible {
    var arguments: [String]
    var stdout: String
    var stderr: String
    /// The exit status, or nil when a signal ended the process.
    var exitStatus: Int32?
    /// The signal that ended the process, if one did.
    var signal: Int32?
    /// True when the harness killed the process at its timeout.
    var timedOut: Bool
    var wallSeconds: Double
    /// The child's own peak resident set size (`ru_maxrss` from `wait4`).
    var peakRSSBytes: Int
    /// False when no C compiler could build `PeakRSSLauncher`: then
    /// `peakRSSBytes` may include the test runner's own peak.
    var peakRSSIsExact: Bool

    var wallMilliseconds: Double { wallSeconds * 1000 }
    var peakRSSMegabytes: Double { Double(peakRSSBytes) / 1_048_576 }

    /// The `FILE:LINE:COLUMN: error: …` (and `warning:`) lines on stderr.
    var diagnostics: [String] {
        stderr.split(separator: "\n").map(String.init).filter { $0.contains(": error: ") || $0.contains(": warning: ") }
    }

    /// Signs of a crash rather than a diagnosed failure.
    var crashEvidence: String? {
        if timedOut { return "killed after the timeout (a hang)" }
        if let signal { return "ended by signal \(signal)" }
        for sign in ["Fatal error", "Program crashed", "Stack dump", "Backtrace", "Illegal instruction", "Segmentation fault"]
        where stderr.contains(sign) {
            return "stderr mentions '\(sign)'"
        }
        return nil
    }

    var description: String {
        let exit = exitStatus.map { "exit \($0)" } ?? signal.map { "signal \($0)" } ?? "?"
        return """
            flowrun \(arguments.joined(separator: " ")) → \(exit)\(timedOut ? " (timed out)" : ""), \
            \(String(format: "%.0f ms, %.1f MB", wallMilliseconds, peakRSSMegabytes))\(peakRSSIsExact ? "" : " (RSS inexact: it may include the test runner's)")
            --- stdout (\(stdout.utf8.count) bytes) ---
            \(stdout.prefix(2000))
            --- stderr (\(stderr.utf8.count) bytes) ---
            \(stderr.prefix(2000))
            """
    }

    /// Expects that the run ended on its own, with no crash.
    func expectNoCrash(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(crashEvidence == nil, "\(self)", sourceLocation: sourceLocation)
    }
}


/// A pseudo-terminal whose device a child can open as stderr; what the child
/// wrote is read back from the controlling side after it exits.
final class PseudoTerminal {
    let controller: Int32
    let devicePath: String

    /// glibc's headers hide these from Swift (they need _XOPEN_SOURCE).
    private typealias Call = @convention(c) (Int32) -> Int32
    private static let openController = cLibrarySymbol("posix_openpt", as: Call.self)
    private static let grant = cLibrarySymbol("grantpt", as: Call.self)
    private static let unlock = cLibrarySymbol("unlockpt", as: Call.self)
    private static let deviceName = cLibrarySymbol(
        "ptsname_r", as: (@convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32).self)

    init() throws {
        guard let openController = Self.openController, let grant = Self.grant, let unlock = Self.unlock,
              let deviceName = Self.deviceName
        else { throw FlowrunBinaryError("this C library has no pseudo-terminal functions") }
        controller = openController(O_RDWR | O_NOCTTY | O_CLOEXEC)
        var name = [CChar](repeating: 0, count: 256)
        guard controller >= 0, grant(controller) == 0, unlock(controller) == 0,
              deviceName(controller, &name, name.count) == 0
        else {
            throw FlowrunBinaryError("cannot open a pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        devicePath = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        _ = fcntl(controller, F_SETFL, fcntl(controller, F_GETFL) | O_NONBLOCK)
    }

    deinit { close(controller) }

    /// Types `bytes` at the terminal (0x03 is Ctrl-C: the line discipline
    /// sends SIGINT to the foreground process group of the session whose
    /// controlling terminal this is).
    func type(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { write(controller, $0.baseAddress, $0.count) } == bytes.count
    }

    /// Everything written so far (the terminal buffers about 4 KiB).
    func drain() -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(controller, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += buffer[0..<count]
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break  // EAGAIN: nothing more; EIO: the device side is closed
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A C library function looked up at run time, for the few that glibc's
/// headers hide from Swift unless feature macros are set.
func cLibrarySymbol<Function>(_ name: String, as type: Function.Type) -> Function? {
    #if canImport(Darwin)
    let handle = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
    #else
    let handle: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
    #endif
    guard let symbol = dlsym(handle, name) else { return nil }
    return unsafeBitCast(symbol, to: type)
}

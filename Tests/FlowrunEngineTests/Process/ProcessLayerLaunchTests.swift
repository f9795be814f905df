@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import Dispatch
import Foundation
import Testing

/// What a child gets from `ProcessLauncher`: signals, descriptors, stdin,
/// environment, directory; and how a failed spawn is reported.
@Suite struct ProcessLayerLaunchTests {
    /// Lines of /proc/self/status as the shell itself sees them (builtins
    /// only, so /proc/self is the shell, not a helper process).
    static let printSignalState = """
        while IFS= read -r line; do
          case $line in SigBlk:*|SigIgn:*) echo "$line";; esac
        done < /proc/self/status
        """

    @Test func childFromADispatchThreadStartsWithNoBlockedAndNoIgnoredSignals() async throws {
        // Spawned from a Dispatch worker thread, which blocks nearly every
        // signal: the mask Foundation.Process would pass on.
        let spawned = OneShot<Result<(TestChild, blocksTerm: Bool), any Error>>()
        DispatchQueue.global().async {
            var mask = sigset_t()
            pthread_sigmask(SIG_BLOCK, nil, &mask)
            let blocksTerm = sigismember(&mask, SIGTERM) == 1
            spawned.fulfil(Result { (try launch(Self.printSignalState), blocksTerm) })
        }
        let (child, parentBlocksTerm) = try #require(await spawned.value()).get()
        #expect(parentBlocksTerm, "the spawning thread should block SIGTERM, or this test proves nothing")

        let lines = await child.output.lines()
        #expect(lines == ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"])
        #expect(await child.exit.value() == .exited(0))
    }

    @Test func childHasOnlyDescriptorsZeroToTwoAndStdinIsDevNull() async throws {
        // Descriptors flowrun holds without close-on-exec must not leak either.
        let leakedFile = open("/dev/null", O_RDONLY)
        var leakedPipe: [Int32] = [0, 0]
        #expect(pipe(&leakedPipe) == 0)
        defer { close(leakedFile); close(leakedPipe[0]); close(leakedPipe[1]) }

        // The glob's own directory descriptor is closed again by the time
        // `[ -e ]` runs, so it is not listed; a leaked one would be.
        let child = try launch("""
            for fd in /proc/self/fd/*; do [ -e "$fd" ] && echo "fd ${fd##*/}"; done
            [ /proc/self/fd/0 -ef /dev/null ] && echo "stdin is /dev/null"
            cat; echo "cat saw end of input"
            """)
        let lines = await child.output.lines()
        #expect(lines == ["fd 0", "fd 1", "fd 2", "stdin is /dev/null", "cat saw end of input"])
        #expect(await child.exit.value() == .exited(0))
    }

    @Test func childGetsExactlyTheEnvironmentAndDirectoryAsked() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flowrun-proc-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let marker = uniqueMarker()
        let environment = [testPath, "SPACES=a  b", "EMPTY=", "QUOTES=it's \"q\" $HOME `x`", "NEWLINE=one\ntwo"]

        // /proc/$$/environ is the shell's environment as exec received it.
        let child = try launch("""
            pwd -P
            tr '\\0' '\\n' < /proc/$$/environ | sed 's/^/env /'
            """, marker: marker, environment: environment, directory: directory)
        let lines = await child.output.lines()
        let expectedEnvironment = (environment + [marker.environmentEntry()]).joined(separator: "\n").split(separator: "\n").map { "env \($0)" }
        #expect(lines == [URL(fileURLWithPath: directory).resolvingSymlinksInPath().path] + expectedEnvironment)
        #expect(await child.exit.value() == .exited(0))
    }

    @Test func spawnFailuresAreThrownWithErrnoText() throws {
        func failure(_ request: LaunchRequest) -> String? {
            do {
                _ = try ProcessLauncher.spawn(request)
                return nil
            } catch {
                return error.description
            }
        }
        let request = LaunchRequest(shell: "/bin/sh", script: "exit 0", environment: [testPath])
        var missingShell = request
        missingShell.shell = "/nonexistent/sh"
        #expect(failure(missingShell) == "exec /nonexistent/sh: No such file or directory (errno 2)")
        var missingDirectory = request
        missingDirectory.workingDirectory = "/nonexistent-flowrun-dir"
        #expect(failure(missingDirectory) == "chdir /nonexistent-flowrun-dir: No such file or directory (errno 2)")
        var nulInEnvironment = request
        nulInEnvironment.environment = [testPath, "BAD=a\0b"]
        #expect(failure(nulInEnvironment) == "environment entry 1 contains a NUL byte: Invalid argument (errno 22)")
    }
}

import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A tiny C program, built once with the toolchain's C compiler, that runs a
/// program from its own small memory and reports the program's exact
/// `wait4` figures (see `ChildProcess` for why the test runner cannot).
///
/// `launcher RESULT PROGRAM [ARG...]` forks and execs PROGRAM (inheriting
/// stdio, directory, environment, signal state and process group), reaps it
/// with `wait4`, and writes `STATUS MAXRSS WALL_NS` to RESULT.
enum PeakRSSLauncher {
    /// The built launcher, or nil when no C compiler is available (then runs
    /// are measured directly and their RSS may include the test runner's).
    static let path: String? = {
        let base = (ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")
        let path = "\(base)/flowrun-e2e-launcher-\(getuid())-\(fingerprint)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
        guard let compiler = compiler() else { return nil }
        do {
            let scratch = try TemporaryDirectory(prefix: "flowrun-launcher")
            let sourcePath = try scratch.write(source, to: "launcher.c")
            let built = scratch.path + "/launcher"
            let compile = try ChildProcess.run(
                executable: compiler, arguments: ["-O2", "-o", built, sourcePath],
                environment: ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" },
                stdoutPath: scratch.path + "/stdout", stderrPath: scratch.path + "/stderr",
                timeout: .seconds(120), launcher: nil)
            guard compile.exitStatus == 0 else { return nil }
            // Publish atomically: parallel test processes may build it at once.
            return rename(built, path) == 0 ? path : nil
        } catch {
            return nil
        }
    }()

    /// `$CC`, else the first `clang`, `cc` or `gcc` on `PATH` (the Swift
    /// toolchain ships clang next to `swift`).
    private static func compiler() -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let cc = environment["CC"], !cc.isEmpty, cc.hasPrefix("/"), FileManager.default.isExecutableFile(atPath: cc) { return cc }
        let directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        for name in ["clang", "cc", "gcc"] {
            for directory in directories where FileManager.default.isExecutableFile(atPath: directory + "/" + name) {
                return directory + "/" + name
            }
        }
        return nil
    }

    /// Changes whenever the source does, so a stale build is never reused.
    private static var fingerprint: String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for byte in source.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3
        }
        return String(hash, radix: 16)
    }

    static let source = """
        #include <errno.h>
        #include <stdio.h>
        #include <string.h>
        #include <sys/resource.h>
        #include <sys/wait.h>
        #include <time.h>
        #include <unistd.h>

        int main(int argc, char **argv) {
            if (argc < 3) { fprintf(stderr, "usage: launcher RESULT PROGRAM [ARG...]\\n"); return 125; }
            /* Descriptors the test runner leaked (no close-on-exec) stop here. */
            for (int fd = 3; fd < 1024; ++fd) close(fd);
            struct timespec start, end;
            clock_gettime(CLOCK_MONOTONIC, &start);
            pid_t pid = fork();
            if (pid < 0) { perror("launcher: fork"); return 125; }
            if (pid == 0) {
                execv(argv[2], argv + 2);
                fprintf(stderr, "launcher: cannot run %s: %s\\n", argv[2], strerror(errno));
                _exit(127);
            }
            int status = 0;
            struct rusage usage;
            while (wait4(pid, &status, 0, &usage) < 0) {
                if (errno != EINTR) { perror("launcher: wait4"); return 125; }
            }
            clock_gettime(CLOCK_MONOTONIC, &end);
            long long wall = (long long)(end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec);
            FILE *result = fopen(argv[1], "w");
            if (!result) { perror("launcher: result file"); return 125; }
            fprintf(result, "%d %ld %lld\\n", status, (long)usage.ru_maxrss, wall);
            return fclose(result) == 0 ? 0 : 125;
        }

        """
}

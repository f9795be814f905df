#if !FUZZING
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Replays files through the fuzz target without a fuzzer: each argument is a
/// file or a directory of files (not recursive), e.g. a crash libFuzzer saved.
///
///     swift build --product flowrun-fuzz
///     .build/debug/flowrun-fuzz Fuzz/corpus Tests/Fixtures/fuzz-regressions crash-1234
///     .build/debug/flowrun-fuzz -v crash-1234    # also print the diagnostics or the plan
///
/// Prints one line per input; a broken invariant traps with its message.
@main
struct Replay {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        let verbose = arguments.first == "-v"
        if verbose { arguments.removeFirst() }
        guard !arguments.isEmpty else {
            print("usage: flowrun-fuzz [-v] FILE_OR_DIRECTORY...")
            exit(2)
        }
        var count = 0
        for argument in arguments {
            for path in inputs(at: argument) {
                guard let bytes = contents(of: path) else {
                    print("flowrun-fuzz: cannot read \(path)")
                    exit(1)
                }
                let outcome = WorkflowFuzzer.exercise(bytes)
                print("\(path): \(bytes.count) bytes, \(outcome.diagnostics.count) diagnostics, \(outcome.planText == nil ? "not planned" : "planned")")
                if verbose {
                    for diagnostic in outcome.diagnostics { print("    " + diagnostic) }
                    if let plan = outcome.planText { print(plan) }
                }
                count += 1
            }
        }
        print("replayed \(count) inputs, no crash")
    }

    /// The path itself, or the regular files in it when it is a directory (sorted).
    static func inputs(at path: String) -> [String] {
        guard let directory = opendir(path) else { return [path] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            var info = stat()
            let full = path.hasSuffix("/") ? path + name : path + "/" + name
            if stat(full, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { names.append(full) }
        }
        return names.sorted()
    }

    static func contents(of path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let read = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if read == 0 { break }
            bytes += buffer[..<read]
        }
        return ferror(file) == 0 ? bytes : nil
    }
}
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `joins/JOIN.json` in the run folder: each join's whole report (every
/// member, every value uncut), written when the join completes.
extension RunRecord {
    func joinReportPath(for join: String) -> String {
        directory + "/joins/" + Self.fileName(join) + ".json"
    }

    /// Writes the report; nil when it was written, else why not.
    func writeJoinReport(_ bytes: [UInt8], to path: String) -> String? {
        if mkdir(directory + "/joins", 0o755) != 0 && errno != EEXIST {
            return "cannot create \(directory)/joins: \(String(cString: strerror(errno)))"
        }
        let descriptor = Self.createRecordFile(path)
        guard descriptor >= 0 else { return "cannot create \(path): \(String(cString: strerror(errno)))" }
        defer { close(descriptor) }
        var line = bytes
        line.append(UInt8(ascii: "\n"))
        let written = line.withUnsafeBytes { writeAll(descriptor, $0) }
        return written ? nil : "cannot write \(path): \(String(cString: strerror(errno)))"
    }

    /// The one place a join report's file is created, so how record files
    /// are opened (flags, mode) can change in one line.
    static func createRecordFile(_ path: String) -> Int32 {
        open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    }
}

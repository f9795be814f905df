#if canImport(Glibc)
import Glibc
#endif

/// `joins/JOIN.json` in the run folder: each join's whole report (every
/// member, every value uncut), written when the join completes. Join names
/// are validated identifiers (`[A-Za-z0-9_][A-Za-z0-9_.-]*`, unique in the
/// file), so the name is the file name as it is.
extension RunRecord {
    package func joinReportPath(for join: String) -> String {
        directory + "/joins/" + join + ".json"
    }

    /// Writes the report, relative to the held run folder like every record
    /// file; nil when it was written, else why not (also noted as a record failure).
    package func writeJoinReport(_ bytes: [UInt8], for join: String) -> String? {
        if mkdirat(folder.descriptor, "joins", 0o700) != 0 && errno != EEXIST {
            return noteJoinFailure("cannot create \(directory)/joins: \(String(cString: strerror(errno)))")
        }
        let joins = openat(folder.descriptor, "joins", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard joins >= 0 else { return noteJoinFailure("cannot open \(directory)/joins: \(String(cString: strerror(errno)))") }
        defer { close(joins) }
        let path = joinReportPath(for: join)
        let descriptor = folder.create(join + ".json", in: joins)
        guard descriptor >= 0 else { return noteJoinFailure("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var line = bytes
        line.append(UInt8(ascii: "\n"))
        let written = line.withUnsafeBytes { writeAll(descriptor, $0) }
        return written ? nil : noteJoinFailure("cannot write \(path): \(String(cString: strerror(errno)))")
    }

    private func noteJoinFailure(_ description: String) -> String {
        folder.noteFailure(description)
        return description
    }
}

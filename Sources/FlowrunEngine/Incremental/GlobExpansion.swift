#if canImport(Glibc)
import Glibc
#endif
package import FlowrunModel

/// The paths a `GlobPattern` matches on disk, sorted, each once: relative
/// to `base` (a task's `cwd`) unless the pattern is absolute. Symbolic links
/// are followed for names a pattern spells out and for files, never by `**`
/// (a link to a parent folder would make the walk endless).
package enum GlobExpansion {
    package static func expand(_ pattern: GlobPattern, base: String) -> [String] {
        if let literal = literalPath(pattern, base: base) {
            var info = stat()
            return stat(literal.full, &info) == 0 ? [literal.shown] : []
        }
        var found = Set<ExactPath>()
        let root = pattern.isAbsolute ? "/" : (base.isEmpty ? "." : base)
        walk(pattern.segments[...], directory: root, shown: pattern.isAbsolute ? "/" : "", into: &found)
        // By bytes: `String`'s order and `Set<String>` take `café` (U+00E9) and `café` (e, U+0301)
        // for one name, and kept one of the two files (an edit to the other went unseen).
        return found.map(\.text).sorted { $0.bytesPrecede($1) }
    }

    /// A pattern without wildcards (`src/main.c`): the path it names as
    /// reported (`shown`) and as opened (`full`, under `base`), nil for one
    /// with wildcards. One `stat` of `full` matches it as the walk would: the
    /// kernel follows links and fails unless every parent is a folder.
    package static func literalPath(_ pattern: GlobPattern, base: String) -> (shown: String, full: String)? {
        var shown = pattern.isAbsolute ? "/" : ""
        for segment in pattern.segments {
            guard case .literal(let bytes) = segment else { return nil }
            shown = join(shown, String(decoding: bytes, as: UTF8.self))
        }
        guard !shown.isEmpty, shown != "/" else { return nil }
        // Spelled as the content hash opens it (`RunEngine.hashes`), so that it names one file in a trace.
        return (shown, pattern.isAbsolute || base.isEmpty ? shown : base + "/" + shown)
    }

    private static func join(_ shown: String, _ name: String) -> String {
        shown.isEmpty ? name : (shown.hasSuffix("/") ? shown + name : shown + "/" + name)
    }

    private static func walk(_ segments: ArraySlice<GlobPattern.Segment>, directory: String, shown: String, into found: inout Set<ExactPath>) {
        guard let segment = segments.first else {
            if !shown.isEmpty { found.insert(ExactPath(text: shown)) }
            return
        }
        let rest = segments.dropFirst()
        switch segment {
        case .literal(let bytes):
            let name = String(decoding: bytes, as: UTF8.self)
            let path = directory + "/" + name
            var info = stat()
            guard stat(path, &info) == 0 else { return }
            if rest.isEmpty {
                found.insert(ExactPath(text: join(shown, name)))
            } else if info.st_mode & S_IFMT == S_IFDIR {
                walk(rest, directory: path, shown: join(shown, name), into: &found)
            }
        case .wildcard(let tokens):
            for entry in entries(of: directory) {
                let matches = entry.name.utf8.withContiguousStorageIfAvailable { GlobPattern.matches(tokens, $0) }
                    ?? Array(entry.name.utf8).withUnsafeBufferPointer { GlobPattern.matches(tokens, $0) }
                guard matches else { continue }
                if rest.isEmpty {
                    found.insert(ExactPath(text: join(shown, entry.name)))
                } else if entry.isDirectory(in: directory) {
                    walk(rest, directory: directory + "/" + entry.name, shown: join(shown, entry.name), into: &found)
                }
            }
        case .anyFolders:
            // None, then one more level of folders (not hidden ones, not through links).
            walk(rest, directory: directory, shown: shown, into: &found)
            for entry in entries(of: directory) where !entry.name.hasPrefix(".") && entry.isRealDirectory(in: directory) {
                walk(segments, directory: directory + "/" + entry.name, shown: join(shown, entry.name), into: &found)
            }
        }
    }

    private struct Entry {
        var name: String
        var type: UInt8

        func isDirectory(in directory: String) -> Bool {
            if type == UInt8(DT_DIR) { return true }
            guard type == UInt8(DT_LNK) || type == UInt8(DT_UNKNOWN) else { return false }
            var info = stat()
            return stat(directory + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
        }

        func isRealDirectory(in directory: String) -> Bool {
            if type == UInt8(DT_DIR) { return true }
            guard type == UInt8(DT_UNKNOWN) else { return false }
            var info = stat()
            return lstat(directory + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
        }
    }

    private static func entries(of directory: String) -> [Entry] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var result: [Entry] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            result.append(Entry(name: name, type: entry.pointee.d_type))
        }
        return result
    }
}

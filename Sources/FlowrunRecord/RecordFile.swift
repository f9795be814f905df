#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues

/// Reading record files relative to the held run folder, never through a link.
enum RecordFile {
    /// The file's bytes (at most `limit`), nil when it is not there or not a plain file.
    static func read(_ folder: Int32, _ name: String, limit: Int?) -> [UInt8]? {
        let file = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let wanted = min(Int(info.st_size), limit ?? .max)
        // Not zeroed first: a 20,000-task summary is megabytes, and every page touched costs.
        return [UInt8](unsafeUninitializedCapacity: wanted) { buffer, initialized in
            var count = 0
            while count < wanted {
                let got = pread(file, buffer.baseAddress! + count, wanted - count, off_t(count))
                if got < 0 && errno == EINTR { continue }
                if got <= 0 { break }
                count += got
            }
            initialized = count
        }
    }

    /// The file's first line (without its line break), at most 64 KiB.
    static func firstLine(_ folder: Int32, _ name: String) -> ArraySlice<UInt8>? {
        guard let head = read(folder, name, limit: 64 * 1024) else { return nil }
        guard let end = head.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        return head[..<end]
    }
}

extension JSONValue {
    /// An object's member `key`.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var double: Double? {
        if case .number(let text) = self { return Double(text) }
        return nil
    }

    var int: Int? {
        if case .number(let text) = self { return Int(text) ?? Double(text).flatMap { Int(exactly: $0) } }
        return nil
    }

    var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    var members: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }
}

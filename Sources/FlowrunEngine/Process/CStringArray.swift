import Glibc

/// A NULL-terminated `char *[]` (argv or envp) built in one allocation: the
/// strings' bytes, each NUL-terminated, then the pointer table. Owned by one
/// caller for the duration of one spawn; freed in `deinit`.
struct CStringArray: ~Copyable {
    private let buffer: UnsafeMutableRawPointer
    /// argv/envp as posix_spawn takes it.
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    /// Entries in `pointers`, the final NULL not counted.
    let count: Int

    /// Copies `strings`, after the entries of `inherited` (which are pointed
    /// at, not copied). Throws EINVAL naming `what` and the index of the first
    /// string holding a NUL byte, which C would silently cut short.
    init(_ strings: [String], what: String, after inherited: InheritedEnvironment? = nil) throws(ProcessError) {
        // Contiguous UTF-8 throughout: one memchr and one memcpy per string
        // (a spawn copies the whole environment).
        var byteCount = 0
        for (index, string) in strings.enumerated() {
            var string = string
            if string.withUTF8({ $0.count > 0 && memchr($0.baseAddress!, 0, $0.count) != nil }) {
                throw ProcessError(operation: "\(what) \(index) contains a NUL byte", code: EINVAL)
            }
            byteCount += string.utf8.count + 1
        }
        let first = inherited?.count ?? 0
        count = first + strings.count
        let tableOffset = (byteCount + 7) & ~7
        let slot = MemoryLayout<UnsafeMutablePointer<CChar>?>.stride
        buffer = .allocate(byteCount: tableOffset + (count + 1) * slot, alignment: 8)
        pointers = (buffer + tableOffset).bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: count + 1)
        if let inherited { pointers.update(from: inherited.pointers, count: first) }
        let bytes = buffer.bindMemory(to: CChar.self, capacity: byteCount)
        var offset = 0
        for (index, string) in strings.enumerated() {
            pointers[first + index] = bytes + offset
            var string = string
            let count = string.withUTF8 { utf8 in
                if let base = utf8.baseAddress { memcpy(bytes + offset, base, utf8.count) }
                return utf8.count
            }
            offset += count
            bytes[offset] = 0
            offset += 1
        }
        pointers[count] = nil
    }

    deinit { buffer.deallocate() }
}

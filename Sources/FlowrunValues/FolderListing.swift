#if canImport(Glibc)
import Glibc
#endif

/// The names in a folder, read whole before the caller acts on any (a name
/// removed or renamed while `readdir` walks the folder may skip others).
/// Opened as `.` under the folder's descriptor, which is left as it was.
package enum FolderListing {
    /// The names in the folder open as `folder`, `.` and `..` left out; nil,
    /// with errno set, when it cannot be listed.
    package static func names(in folder: Int32) -> [String]? {
        let copy = openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard copy >= 0 else { return nil }
        guard let listing = fdopendir(copy) else {
            let reason = errno
            close(copy)
            errno = reason
            return nil
        }
        defer { closedir(listing) }
        var names: [String] = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

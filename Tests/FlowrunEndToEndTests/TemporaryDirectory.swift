import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh directory under the system's temporary directory, removed with
/// everything in it when the value goes away.
final class TemporaryDirectory {
    let path: String

    init(prefix: String = "flowrun-e2e") throws {
        let base = (ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")
        var template = Array("\(base)/\(prefix).XXXXXX".utf8CString)
        guard let created = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw FlowrunBinaryError("mkdtemp: \(String(cString: strerror(errno)))")
        }
        path = String(cString: created)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes `bytes` to `name` in this directory and returns its path.
    @discardableResult
    func write(_ bytes: some Collection<UInt8>, to name: String) throws -> String {
        let file = path + "/" + name
        guard FileManager.default.createFile(atPath: file, contents: Data(bytes)) else {
            throw FlowrunBinaryError("cannot write \(file)")
        }
        return file
    }

    /// Writes UTF-8 `text` to `name` in this directory and returns its path.
    @discardableResult
    func write(_ text: String, to name: String) throws -> String {
        try write(Array(text.utf8), to: name)
    }
}

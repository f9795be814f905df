import FlowrunValues

/// A path (or any text) that equals another only byte for byte. Swift's
/// `String` compares and hashes by canonical equivalence: `café` with U+00E9
/// and with e + U+0301 are one `String`, but two names, two files, on Linux.
/// Used wherever paths are told apart (a glob's matches, the hashes taken
/// this run), so that one of two such files is never taken for the other.
struct ExactPath: Hashable {
    var text: String

    init(text: String) {
        self.text = text
    }

    static func == (first: ExactPath, second: ExactPath) -> Bool {
        first.text.hasSameBytes(as: second.text)
    }

    func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

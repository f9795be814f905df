#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading and checking raw input before any YAML parsing happens.
public enum YAMLInput {
    /// Reads at most `limits.maxBytes + 1` bytes of a file, so a huge file
    /// (or an endless device) is refused without reading it whole.
    public static func read(path: String, limits: YAMLLimits = YAMLLimits()) throws(YAMLProblem) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw YAMLProblem("cannot open: \(String(cString: strerror(errno)))", at: .start)
        }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR { throw YAMLProblem("is a directory, not a workflow file", at: .start) }
            if (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) > limits.maxBytes {
                throw tooLarge(Int(info.st_size), limits: limits)
            }
        }
        var bytes: [UInt8] = []
        // A plain file is read into an array of its size (one more byte: one
        // grown since the fstat goes on below), not zeroed first: a 64 KiB
        // zeroed chunk for a 2 KB workflow was 15 page faults at every start.
        if (info.st_mode & S_IFMT) == S_IFREG {
            let capacity = Int(info.st_size) + 1
            bytes = try [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count throws(YAMLProblem) in
                while count < capacity {
                    let got = systemRead(fd, buffer.baseAddress! + count, capacity - count)
                    if got < 0 {
                        if errno == EINTR { continue }
                        throw YAMLProblem("cannot read: \(String(cString: strerror(errno)))", at: .start)
                    }
                    if got == 0 { break }
                    count += got
                }
            }
            if bytes.count < capacity { return bytes }
        }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count <= limits.maxBytes {
            let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw YAMLProblem("cannot read: \(String(cString: strerror(errno)))", at: .start)
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        if bytes.count > limits.maxBytes { throw tooLarge(bytes.count, limits: limits) }
        return bytes
    }

    /// Refuses text that is not UTF-8, naming where the first bad byte is.
    public static func checkUTF8(_ bytes: [UInt8]) throws(YAMLProblem) {
        if let encoding = byteOrderMarkEncoding(bytes) {
            throw YAMLProblem("the file is \(encoding) text (it starts with a byte order mark); save it as UTF-8", at: .start)
        }
        var index = 0
        while index < bytes.count {
            if bytes[index] < 0x80 {
                index += 1
                continue
            }
            let length = sequenceLength(bytes, at: index)
            guard length > 0 else {
                let hex = String(bytes[index], radix: 16, uppercase: true)
                throw YAMLProblem(
                    "the file is not UTF-8 text (byte 0x\(hex.count == 1 ? "0" + hex : hex) cannot start or continue a character here); save it as UTF-8",
                    at: mark(ofByte: index, in: bytes))
            }
            index += length
        }
    }

    /// The 1-based line:column of the byte at `offset`, counting line breaks
    /// the way libyaml does (LF, CR LF, CR, NEL, LS, PS) and columns in
    /// Unicode scalars, so marks agree with libyaml's own. `bytes[..<offset]`
    /// must be UTF-8.
    static func mark(ofByte offset: Int, in bytes: some Collection<UInt8>) -> Mark {
        var line = 1
        var column = 1
        var previous: UInt8 = 0
        var beforePrevious: UInt8 = 0
        for byte in bytes.prefix(offset) {
            switch byte {
            case 0x0A where previous == 0x0D:
                break  // the LF of a CR LF: the CR already started the line
            case 0x0A, 0x0D:
                line += 1
                column = 1
            case 0x85 where previous == 0xC2,
                 0xA8 where previous == 0x80 && beforePrevious == 0xE2,
                 0xA9 where previous == 0x80 && beforePrevious == 0xE2:
                // NEL, LS, PS: their lead byte already counted as a column.
                line += 1
                column = 1
            case 0x80...0xBF:
                break  // a continuation byte: same character
            default:
                column += 1
            }
            beforePrevious = previous
            previous = byte
        }
        return Mark(line: line, column: column)
    }

    /// A UTF-16 or UTF-32 byte order mark, which libyaml would half-accept.
    private static func byteOrderMarkEncoding(_ bytes: [UInt8]) -> String? {
        if bytes.starts(with: [0x00, 0x00, 0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE, 0x00, 0x00]) { return "UTF-32" }
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) { return "UTF-16" }
        return nil
    }

    /// The length of the valid UTF-8 sequence at `index`, or 0 if it is invalid
    /// (overlong forms, surrogates and values past U+10FFFF are invalid).
    private static func sequenceLength(_ bytes: [UInt8], at index: Int) -> Int {
        let lead = bytes[index]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return 0
        }
        guard index + length <= bytes.count else { return 0 }
        for offset in 1..<length {
            let byte = bytes[index + offset]
            let (min, max) = offset == 1 ? (low, high) : (0x80, 0xBF)
            guard byte >= min && byte <= max else { return 0 }
        }
        return length
    }

    static func tooLarge(_ size: Int, limits: YAMLLimits) -> YAMLProblem {
        let limit = "\(limits.maxBytes / 1_048_576) MiB"
        return YAMLProblem("the file is larger than \(limit) (\(size)+ bytes); workflow files are limited to \(limit)", at: .start)
    }
}

/// `read(2)`, named apart from `YAMLInput.read(path:limits:)`.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Darwin.read(fd, buffer, count)
    #endif
}

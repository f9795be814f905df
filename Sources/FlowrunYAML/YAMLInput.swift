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
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count <= limits.maxBytes {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
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
        var line = 1
        var lineStart = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x80 {
                if byte == 0x0A { line += 1; lineStart = index + 1 }
                index += 1
                continue
            }
            let length = sequenceLength(bytes, at: index)
            guard length > 0 else {
                let column = String(decoding: bytes[lineStart..<index], as: UTF8.self).count + 1
                let hex = String(byte, radix: 16, uppercase: true)
                throw YAMLProblem(
                    "the file is not UTF-8 text (byte 0x\(hex.count == 1 ? "0" + hex : hex) cannot start or continue a character here); save it as UTF-8",
                    at: Mark(line: line, column: column))
            }
            index += length
        }
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

    private static func tooLarge(_ size: Int, limits: YAMLLimits) -> YAMLProblem {
        let limit = "\(limits.maxBytes / 1_048_576) MiB"
        return YAMLProblem("the file is larger than \(limit) (\(size)+ bytes); workflow files are limited to \(limit)", at: .start)
    }
}

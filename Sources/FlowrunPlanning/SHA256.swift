import CFlowrunSystem

/// SHA-256 (FIPS 180-4), for task identities and the content hashes of
/// `sources`/`generates`: Foundation on Linux has no digest, and a
/// collision-resistant hash means a changed file is never taken for an
/// unchanged one. Streaming: `update` any number of times, then `finalize`.
///
/// Blocks are compressed with the CPU's SHA instructions where it has them
/// (`flowrun_sha256_blocks`: most x86-64 CPUs made since 2017), else word by word
/// here; `ContentHashTests` holds the two to each other and to FIPS's examples.
package struct SHA256: Sendable {
    /// Whether this CPU compresses blocks for us (asked once per process).
    package static let hasHardware = flowrun_sha256_hardware() != 0

    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// Bytes of an incomplete block (the first `buffered` of its 64), kept
    /// inline: a hash made per task part costs no allocation.
    private var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var buffered = 0
    private var length: UInt64 = 0

    /// The CPU's instructions or this file's: the same digest (tests compare them).
    private let usesHardware: Bool

    package init() { usesHardware = Self.hasHardware }

    /// Word by word here, whatever the CPU has: for tests.
    package init(portable: Bool) { usesHardware = portable ? false : Self.hasHardware }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        length &+= UInt64(bytes.count)
        var offset = 0
        if buffered > 0 {
            let take = min(64 - buffered, bytes.count)
            let start = buffered
            withUnsafeMutableBytes(of: &buffer) { ($0.baseAddress! + start).copyMemory(from: base, byteCount: take) }
            buffered += take
            offset = take
            guard buffered == 64 else { return }
            var block = buffer
            withUnsafeBytes(of: &block) { compress($0.baseAddress!) }
            buffered = 0
        }
        if usesHardware, bytes.count - offset >= 64 {
            let blocks = (bytes.count - offset) / 64
            compressWithHardware(base + offset, blocks: blocks)
            offset += blocks * 64
        }
        while bytes.count - offset >= 64 {
            compress(base + offset)
            offset += 64
        }
        if offset < bytes.count {
            let rest = bytes.count - offset
            withUnsafeMutableBytes(of: &buffer) { $0.baseAddress!.copyMemory(from: base + offset, byteCount: rest) }
            buffered = rest
        }
    }

    package mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    package mutating func update(_ text: String) {
        var text = text
        text.withUTF8 { update(UnsafeRawBufferPointer($0)) }
    }

    /// A string and its length: two fields can never run into each other
    /// (`ab`+`c` and `a`+`bc` hash differently).
    package mutating func field(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            updateLengthPrefix(utf8.count)
            update(UnsafeRawBufferPointer(utf8))
        }
    }

    /// `COUNT:` in decimal, written on the stack.
    private mutating func updateLengthPrefix(_ count: Int) {
        var text: (UInt64, UInt64, UInt64) = (0, 0, 0)  // up to 19 digits and the colon
        let start = withUnsafeMutableBytes(of: &text) { text -> Int in
            var value = count
            var start = 20
            text[start] = UInt8(ascii: ":")
            repeat {
                start -= 1
                text[start] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            } while value > 0
            return start
        }
        withUnsafeBytes(of: &text) { update(UnsafeRawBufferPointer(rebasing: $0[start...20])) }
    }

    /// Appends the final padding and length (FIPS 180-4, 5.1.1).
    private mutating func pad() {
        let bitLength = length &* 8
        let padding = (56 &- (Int(length % 64) + 1) + 64) % 64
        var tail: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &tail) { tail in
            tail[0] = 0x80
            for byte in 0..<8 { tail[1 + padding + byte] = UInt8(truncatingIfNeeded: bitLength >> UInt64(56 - 8 * byte)) }
        }
        let savedLength = length
        withUnsafeBytes(of: &tail) { update(UnsafeRawBufferPointer(rebasing: $0[0..<(1 + padding + 8)])) }
        length = savedLength
    }

    /// The digest's first 32 bits (its first 8 hex digits): what a task
    /// identity keeps of each part, without a string.
    package mutating func finalizePrefix() -> UInt32 {
        pad()
        return state.0
    }

    /// The 32-byte digest as 64 lowercase hex digits.
    package mutating func finalize() -> String {
        pad()
        let words = state
        return String(unsafeUninitializedCapacity: 64) { hex in
            withUnsafeBytes(of: words) { raw in
                for index in 0..<8 {
                    let word = raw.load(fromByteOffset: 4 * index, as: UInt32.self)
                    for position in 0..<8 {
                        let nibble = UInt8(truncatingIfNeeded: word >> UInt32(28 - 4 * position)) & 0xf
                        hex[8 * index + position] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                    }
                }
            }
            return 64
        }
    }

    /// The hex digest of a string.
    package static func hex(_ text: String) -> String {
        var hash = SHA256()
        hash.update(text)
        return hash.finalize()
    }

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    private mutating func compressWithHardware(_ data: UnsafeRawPointer, blocks: Int) {
        withUnsafeMutableBytes(of: &state) { words in
            flowrun_sha256_blocks(words.baseAddress!.assumingMemoryBound(to: UInt32.self), data.assumingMemoryBound(to: UInt8.self), blocks)
        }
    }

    private mutating func compress(_ block: UnsafeRawPointer) {
        if usesHardware { return compressWithHardware(block, blocks: 1) }
        // The message schedule on the stack: no array per block.
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for i in 0..<16 {
                let b = block + i * 4
                w[i] = UInt32(b.load(as: UInt8.self)) << 24 | UInt32(b.load(fromByteOffset: 1, as: UInt8.self)) << 16
                    | UInt32(b.load(fromByteOffset: 2, as: UInt8.self)) << 8 | UInt32(b.load(fromByteOffset: 3, as: UInt8.self))
            }
            for i in 16..<64 {
                let s0 = w[i - 15].rotatedRight(7) ^ w[i - 15].rotatedRight(18) ^ (w[i - 15] >> 3)
                let s1 = w[i - 2].rotatedRight(17) ^ w[i - 2].rotatedRight(19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = state
            Self.k.withUnsafeBufferPointer { k in
                for i in 0..<64 {
                    let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                    let choice = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ choice &+ k[i] &+ w[i]
                    let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let t2 = s0 &+ majority
                    h = g
                    g = f
                    f = e
                    e = d &+ t1
                    d = c
                    c = b
                    b = a
                    a = t1 &+ t2
                }
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
        }
    }
}

extension UInt32 {
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
}

#if canImport(Glibc)
import Glibc
#endif

/// The `[path, hash, stamp]` entries read from `.flowrun/state` in one
/// store's life, each kept once by its bytes. The 70 state files of a
/// BoringSSL no-op run list the same 90 headers with the same hashes and
/// stamps: 6,370 entries of which 230 differ. An entry found again costs a
/// hash of its bytes and one compare, instead of two strings made (UTF-8
/// checked, allocated) and a stamp parsed; and the check then compares
/// strings that share their storage.
///
/// Owned by `IncrementalStore`, behind its `Mutex`. Holds at most
/// `capacityLimit` entries and `bytesLimit` bytes of them (a `flowrun
/// watch` keeps its store for many runs, each with new hashes, and a state
/// file may hold anything): past that, and past `probesAtMost` slots looked
/// at, an entry is read as it would be without the pool.
struct StateEntryPool {
    static let capacityLimit = 1 << 16
    static let bytesLimit = 16 << 20
    static let probesAtMost = 16

    private struct Slot {
        var hash: UInt64
        var bytes: [UInt8]
        var entry: IncrementalRecord.PathHash
    }

    private var slots: [Slot?] = []
    private var count = 0
    private var bytesKept = 0

    init() {}

    /// The entry those bytes (one whole `[…]`, as the writer writes it) were read as before.
    func entry(_ bytes: UnsafeBufferPointer<UInt8>) -> IncrementalRecord.PathHash? {
        guard !slots.isEmpty, !bytes.isEmpty else { return nil }
        let hash = Self.hash(bytes)
        let mask = slots.count - 1
        var index = Int(truncatingIfNeeded: hash) & mask
        for _ in 0..<Self.probesAtMost {
            guard let slot = slots[index] else { return nil }
            if slot.hash == hash, slot.bytes.count == bytes.count,
               slot.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
                return slot.entry
            }
            index = (index + 1) & mask
        }
        return nil
    }

    /// Keeps `entry`, read from those bytes, if there is room.
    mutating func keep(_ entry: IncrementalRecord.PathHash, readFrom bytes: UnsafeBufferPointer<UInt8>) {
        guard count < Self.capacityLimit, bytesKept + bytes.count <= Self.bytesLimit, !bytes.isEmpty else { return }
        if slots.isEmpty { slots = Array(repeating: nil, count: 256) }
        let hash = Self.hash(bytes)
        let mask = slots.count - 1
        var index = Int(truncatingIfNeeded: hash) & mask
        for _ in 0..<Self.probesAtMost {
            guard slots[index] != nil else {
                slots[index] = Slot(hash: hash, bytes: Array(bytes), entry: entry)
                count += 1
                bytesKept += bytes.count
                // At most half full: a probe ends soon at an empty slot.
                if count * 2 > slots.count { grow() }
                return
            }
            index = (index + 1) & mask
        }
    }

    private mutating func grow() {
        let old = slots
        slots = Array(repeating: nil, count: old.count * 2)
        let mask = slots.count - 1
        count = 0
        for case let slot? in old {
            var index = Int(truncatingIfNeeded: slot.hash) & mask
            var probes = 0
            while slots[index] != nil && probes < Self.probesAtMost {
                index = (index + 1) & mask
                probes += 1
            }
            // A run of collisions longer than a lookup looks at: dropped, as it would not be found.
            guard slots[index] == nil else { continue }
            slots[index] = slot
            count += 1
        }
    }

    /// The length and the last 32 bytes, eight at a time: an entry ends
    /// with its stamp (inode, ctime) or its content hash, which tell files
    /// apart; its path is compared, not hashed. Not a defence against chosen
    /// collisions, which cost only a bounded probe (`probesAtMost`) and are
    /// then read without the pool.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash = UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15
        let raw = UnsafeRawBufferPointer(bytes)
        var offset = max(0, raw.count - 32)
        while offset + 8 <= raw.count {
            let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            hash = (hash ^ word) &* 0xBF58_476D_1CE4_E5B9
            hash ^= hash >> 31
            offset += 8
        }
        while offset < raw.count {
            hash = (hash ^ UInt64(raw[offset])) &* 0x94D0_49BB_1331_11EB
            offset += 1
        }
        return hash ^ (hash >> 29)
    }
}

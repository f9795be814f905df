#if canImport(Glibc)
import Glibc
#endif

/// `capacity: auto` (SPEC §13): the CPUs this process may use (its affinity
/// mask, lowered by its cgroup's CPU quota) and its memory (its cgroup's
/// limit, else MemTotal). Read once per process.
package enum HostCapacity {
    package static let cpus: Double = {
        var cpus = Double(HostFacts.cpus)
        if let quota = cpuQuota(CgroupLayout.current) { cpus = min(cpus, quota) }
        return max(cpus, 0.001)
    }()

    package static let memoryBytes: UInt64 = {
        var bytes = memTotal() ?? UInt64(1) << 40
        if let limit = memoryLimit(CgroupLayout.current) { bytes = min(bytes, limit) }
        return bytes
    }()

    /// `cpu.max` (v2: `QUOTA PERIOD` or `max PERIOD`), else v1's `cfs_quota_us / cfs_period_us` (-1: none).
    static func cpuQuota(_ layout: CgroupLayout) -> Double? {
        if let unified = layout.unified, let text = SystemFile.read(unified + "/cpu.max") {
            let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
            if words.count == 2, let quota = Double(words[0]), let period = Double(words[1]), period > 0 { return quota / period }
        }
        if let cpu = layout.cpu, let quota = SystemFile.number(cpu + "/cpu.cfs_quota_us"), quota > 0,
           let period = SystemFile.number(cpu + "/cpu.cfs_period_us"), period > 0 {
            return Double(quota) / Double(period)
        }
        return nil
    }

    /// `memory.max` (v2), else v1's `memory.limit_in_bytes` (a huge number: none).
    static func memoryLimit(_ layout: CgroupLayout) -> UInt64? {
        if let unified = layout.unified, let limit = SystemFile.number(unified + "/memory.max"), limit > 0 { return UInt64(limit) }
        if let memory = layout.memory, let limit = SystemFile.number(memory + "/memory.limit_in_bytes"), limit > 0, limit < Int64(1) << 60 {
            return UInt64(limit)
        }
        return nil
    }

    private static func memTotal() -> UInt64? {
        guard let text = SystemFile.read("/proc/meminfo") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("MemTotal:") {
            let words = line.split(separator: " ")
            if words.count >= 2, let kibibytes = UInt64(words[1]) { return kibibytes * 1024 }
        }
        return nil
    }
}

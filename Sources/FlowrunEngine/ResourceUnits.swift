import FlowrunModel

/// Declared resources as whole slot-pool amounts: CPUs in thousandths,
/// memory in KiB (rounded up, so a task never holds less than it declared).
enum ResourceUnits {
    static func cpus(_ cpus: Double) -> Int { Int((cpus * 1000).rounded(.up)) }
    static func memory(_ bytes: UInt64) -> Int { Int(min(bytes, UInt64(Int.max) - 1023) / 1024 + (bytes % 1024 == 0 ? 0 : 1)) }

    /// An amount of resource `resource` of the pool as people read it.
    static func text(_ amount: Int, of resource: Int) -> String {
        resource == RunEngine.cpuResource ? CPUText.text(Double(amount) / 1000) + (amount == 1000 ? " CPU" : " CPUs") : ByteSize.text(UInt64(amount) * 1024)
    }
}

/// What one attempt of a task used (SPEC §13): measured for every task.
package struct ResourceUsage: Sendable, Equatable {
    /// The most memory at once: the cgroup's peak where the attempt had
    /// one, else the largest resident set among the processes of its tree
    /// that were waited for (`wait4`'s `ru_maxrss`).
    package var peakMemoryBytes: UInt64?
    /// CPU time, user + system, of the processes of its tree that were waited for.
    package var cpuSeconds: Double?

    package init(peakMemoryBytes: UInt64? = nil, cpuSeconds: Double? = nil) {
        self.peakMemoryBytes = peakMemoryBytes
        self.cpuSeconds = cpuSeconds
    }
}

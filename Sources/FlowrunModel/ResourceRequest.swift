/// `resources: { cpus: 2, memory: 6G }` — what one attempt of a task needs
/// (SPEC §13). Plain numbers so that every executor maps them alike: the
/// local one admits and enforces them, Slurm passes them as
/// `--cpus-per-task` / `--mem`. A field left out is nil and counts as zero.
public struct ResourceRequest: Sendable, Hashable {
    /// CPUs, possibly fractional (`0.5`).
    public var cpus: Double?
    /// Bytes (sizes are binary: `1G` is 2^30).
    public var memoryBytes: UInt64?
    /// Where `resources:` is written, to blame a declaration over capacity.
    public var location: SourceLocation

    public init(cpus: Double? = nil, memoryBytes: UInt64? = nil, location: SourceLocation) {
        self.cpus = cpus
        self.memoryBytes = memoryBytes
        self.location = location
    }

    /// `2 CPUs, 6 GiB memory`, as the plan, `list` and the live view say it.
    public var text: String {
        [cpus.map { "\(CPUText.text($0)) CPU\($0 == 1 ? "" : "s")" }, memoryBytes.map { "\(ByteSize.text($0)) memory" }].compactMap { $0 }.joined(separator: ", ")
    }

    /// This request with its memory multiplied by `factor` (a retry after
    /// an out-of-memory death), never past `limit`.
    public func withMemory(times factor: Double, atMost limit: UInt64?) -> ResourceRequest {
        guard let memoryBytes else { return self }
        var grown = Double(memoryBytes) * factor
        if let limit { grown = min(grown, Double(limit)) }
        var copy = self
        copy.memoryBytes = grown >= Double(UInt64.max) ? UInt64.max : UInt64(grown.rounded(.down))
        return copy
    }
}

/// The reason every executor gives an attempt the kernel (or Slurm's
/// `OUT_OF_MEMORY`) killed for its memory limit: `out of memory (limit 6 GiB)`.
public enum OutOfMemory {
    public static func reason(limitBytes: UInt64?) -> String {
        limitBytes.map { "out of memory (limit \(ByteSize.text($0)))" } ?? "out of memory"
    }
}

/// `retry_resources: { memory: x2 }` — how an attempt that died out of
/// memory grows the next one's memory (capped at `capacity`).
public struct RetryResources: Sendable, Hashable {
    public var memoryFactor: Double

    public init(memoryFactor: Double) {
        self.memoryFactor = memoryFactor
    }
}

/// Top-level `capacity: { cpus, memory }`: what declared resources are
/// admitted against. A nil field is `auto` (this machine's, `HostCapacity`).
public struct ResourceCapacity: Sendable, Hashable {
    public var cpus: Double?
    public var memoryBytes: UInt64?
    public var location: SourceLocation?

    public init(cpus: Double? = nil, memoryBytes: UInt64? = nil, location: SourceLocation? = nil) {
        self.cpus = cpus
        self.memoryBytes = memoryBytes
        self.location = location
    }
}

/// Byte counts as people read and write them, in binary units.
public enum ByteSize {
    /// `512M`, `6G`, `1.5G`, `100Mi`, `2GiB`, `1048576` (bytes); nil if not a size.
    public static func parse(_ text: String) -> UInt64? {
        var digits = Substring(text.trimmingCharacters(in: " "))
        var multiplier: Double = 1
        for (suffixes, power) in [(["KiB", "Ki", "K", "k"], 1), (["MiB", "Mi", "M", "m"], 2), (["GiB", "Gi", "G", "g"], 3), (["TiB", "Ti", "T", "t"], 4)] {
            if let suffix = suffixes.first(where: { digits.hasSuffix($0) }) {
                digits = digits.dropLast(suffix.count)
                multiplier = pow1024(power)
                break
            }
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let number = Double(digits), number.isFinite, number > 0 else { return nil }
        let bytes = (number * multiplier).rounded(.down)
        guard bytes >= 1, bytes < 9.0e18 else { return nil }
        return UInt64(bytes)
    }

    /// `100 MiB`, `1.5 GiB`, `512 KiB`, `900 B`: the largest unit with a value of at least 1, one decimal when not whole.
    public static func text(_ bytes: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let rounded = (value * 10).rounded() / 10
        let number = rounded == rounded.rounded(.down) ? String(Int(rounded)) : String(rounded)
        return "\(number) \(units[unit])"
    }

    private static func pow1024(_ power: Int) -> Double {
        (0..<power).reduce(1.0) { value, _ in value * 1024 }
    }
}

extension String {
    fileprivate func trimmingCharacters(in character: Character) -> Substring {
        var text = Substring(self)
        while text.first == character { text = text.dropFirst() }
        while text.last == character { text = text.dropLast() }
        return text
    }
}

/// CPUs as written: `2`, `0.5`, `1.25`.
public enum CPUText {
    public static func text(_ cpus: Double) -> String {
        let thousandths = (cpus * 1000).rounded()
        if thousandths.truncatingRemainder(dividingBy: 1000) == 0 { return String(Int(thousandths / 1000)) }
        var text = String(thousandths / 1000)
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }
}

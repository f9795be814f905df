import FlowrunYAML
import FlowrunModel

/// `resources:`, `retry_resources:` and the top-level `capacity:` (SPEC §13).
extension WorkflowDecoder {
    static let resourceKeys = ["cpus", "memory"]

    /// `resources: { cpus: 2, memory: 6G }`
    mutating func resources(_ pair: YAMLNode.Pair) -> ResourceRequest? {
        guard let fields = fields(of: pair.value, what: "resources", allowed: Self.resourceKeys) else { return nil }
        var request = ResourceRequest(location: location(pair.key))
        if let node = fields["cpus"]?.value { request.cpus = cpus(node, what: "resources.cpus") }
        if let node = fields["memory"]?.value { request.memoryBytes = size(node, what: "resources.memory") }
        guard request.cpus != nil || request.memoryBytes != nil else {
            if fields["cpus"] == nil && fields["memory"] == nil { error("resources needs cpus or memory (e.g. {cpus: 2, memory: 4G})", at: pair.value) }
            return nil
        }
        return request
    }

    /// `retry_resources: { memory: x2 }`
    mutating func retryResources(_ node: YAMLNode) -> RetryResources? {
        guard let fields = fields(of: node, what: "retry_resources", allowed: ["memory"]) else { return nil }
        guard let factorNode = fields["memory"]?.value else {
            error("retry_resources needs memory: a factor like x2", at: node)
            return nil
        }
        guard let text = factorNode.scalar?.text, text.hasPrefix("x"), let factor = Double(text.dropFirst()), factor.isFinite, factor > 1, factor <= 100 else {
            error("retry_resources.memory takes a factor greater than 1 and at most 100, like x2 or x1.5, found \(describe(factorNode))", at: factorNode)
            return nil
        }
        return RetryResources(memoryFactor: factor)
    }

    /// `capacity: { cpus: auto | N, memory: auto | SIZE }`
    mutating func capacity(_ pair: YAMLNode.Pair) -> ResourceCapacity {
        var capacity = ResourceCapacity(location: location(pair.key))
        if pair.value.scalar?.text == "auto" { return capacity }
        guard let fields = fields(of: pair.value, what: "capacity", allowed: Self.resourceKeys) else { return capacity }
        if let node = fields["cpus"]?.value, node.scalar?.text != "auto" { capacity.cpus = cpus(node, what: "capacity.cpus") }
        if let node = fields["memory"]?.value, node.scalar?.text != "auto" { capacity.memoryBytes = size(node, what: "capacity.memory") }
        return capacity
    }

    /// A positive number of CPUs, in thousandths at the finest (`0.5`, `2`).
    private mutating func cpus(_ node: YAMLNode, what: String) -> Double? {
        guard let value = number(node, what: what, in: 0.001...4096) else { return nil }
        return (value * 1000).rounded() / 1000
    }

    /// A size in binary units: `512M`, `6G`, `1.5G`, `100Mi`, or bytes.
    private mutating func size(_ node: YAMLNode, what: String) -> UInt64? {
        guard !holdsExpression(node, what: what) else { return nil }
        guard let text = node.scalar?.text, !(node.scalar?.isNull ?? true) else {
            error("expected a size for \(what) (like 512M, 6G or 1.5G), found \(describe(node))", at: node)
            return nil
        }
        if text.hasSuffix("MB") || text.hasSuffix("GB") || text.hasSuffix("KB") || text.hasSuffix("TB") {
            error("\(what): sizes are binary (1G = 1024M); write \(text.dropLast()) or \(text.dropLast())i, found '\(text)'", at: node)
            return nil
        }
        guard let bytes = ByteSize.parse(text) else {
            error("expected a size for \(what) (like 512M, 6G or 1.5G; K, M, G and T are binary units), found \(describe(node))", at: node)
            return nil
        }
        guard bytes >= 1024 * 1024 else {
            error("\(what) must be at least 1M, found '\(text)'", at: node)
            return nil
        }
        return bytes
    }
}

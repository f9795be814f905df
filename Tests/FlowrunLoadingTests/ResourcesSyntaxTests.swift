import FlowrunModel
import FlowrunTestSupport
import Testing

/// `resources:`, `retry_resources:` and `capacity:` (SPEC §13): sizes in
/// binary units, fractional CPUs, and every mistake named at its place.
@Suite struct ResourcesSyntaxTests {
    @Test(arguments: [
        ("512M", 512 << 20), ("6G", 6 << 30), ("1.5G", 3 << 29), ("100Mi", 100 << 20), ("2GiB", 2 << 30),
        ("1048576", 1 << 20), ("64K", 64 << 10), ("1T", 1 << 40),
    ])
    func sizesAreBinary(text: String, bytes: Int) {
        #expect(ByteSize.parse(text) == UInt64(bytes))
    }

    @Test(arguments: ["", "M", "-1G", "1.5.G", "1E", "G1", "ten"])
    func notSizes(text: String) {
        #expect(ByteSize.parse(text) == nil)
    }

    @Test(arguments: [(100 << 20, "100 MiB"), (3 << 29, "1.5 GiB"), (900, "900 B"), (6 << 30, "6 GiB")])
    func sizesAsPeopleReadThem(bytes: Int, text: String) {
        #expect(ByteSize.text(UInt64(bytes)) == text)
    }

    @Test func theKeysOnTasksFanOutsAndTemplatesDecode() throws {
        let decoded = try workflow("""
            capacity: {cpus: 8, memory: 16G}
            templates:
              heavy: {run: "true", resources: {memory: 2G}}
            tasks:
              train: {run: "true", resources: {cpus: 2.5, memory: 6G}, retry_resources: {memory: x1.5}}
              called: {uses: heavy}
            groups:
              shards:
                foreach: [a, b]
                task: {run: "true", resources: {cpus: 0.5}}
              builds:
                matrix: {os: [linux, mac], arch: [x86, arm]}
                task: {run: "true", resources: {memory: 1.5G}}
            """)
        #expect(decoded.capacity.cpus == 8)
        #expect(decoded.capacity.memoryBytes == 16 << 30)
        let train = try #require(decoded.tasks.first { $0.name == "train" })
        #expect(train.resources?.cpus == 2.5)
        #expect(train.resources?.memoryBytes == 6 << 30)
        #expect(train.retryResources?.memoryFactor == 1.5)
        #expect(decoded.tasks.first { $0.name == "called" }?.resources?.memoryBytes == 2 << 30)
        #expect(decoded.groups.first?.fanOut?.template.resources?.cpus == 0.5)
        #expect(decoded.groups.first { $0.name == "builds" }?.fanOut?.template.resources?.memoryBytes == 3 << 29)
    }

    @Test func mistakesAreNamedAtTheirPlace() {
        let text = MarkedText("""
            capacity: {cpus: 2, memory: 1G}
            tasks:
              a: {run: "true", resources: {memory: ¹512MB}}
              b: {run: "true", resources: {cpus: ²0}}
              c: {run: "true", resources: {memory: 1G}, retry_resources: {memory: ³2}}
              d: {run: "true", ⁴retry_resources: {memory: x2}}
              e: {run: "true", ⁵resources: {cpus: 4}}
              f: {run: "true", resources: {⁶disk: 1G}}
            """)
        let found = diagnostics(text.text)
        #expect(found.contains("\(text.positions[1]!): error: resources.memory: sizes are binary (1G = 1024M); write 512M or 512Mi, found '512MB'"), "\(found)")
        #expect(found.contains("\(text.positions[2]!): error: resources.cpus must be at least 0.001, found 0"), "\(found)")
        #expect(found.contains { $0.hasPrefix("\(text.positions[3]!): error: retry_resources.memory takes a factor greater than 1") }, "\(found)")
        #expect(found.contains { $0.contains("retry_resources grows resources.memory, which task 'd' does not declare") }, "\(found)")
        #expect(found.contains("\(text.positions[5]!): error: task 'e' declares 4 CPUs, more than capacity of 2 CPUs: it could never start; lower resources.cpus or raise capacity.cpus"), "\(found)")
        #expect(found.contains { $0.hasPrefix("\(text.positions[6]!): error: unknown key 'disk' in resources") }, "\(found)")
        _ = text.positions[4]
    }
}

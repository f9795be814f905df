#if canImport(Glibc)
import Glibc
#endif
package import FlowrunModel
import FlowrunValues

/// A task's identity: a SHA-256 of its resolved definition, so that
/// `flowrun resume` can tell whether a task it would skip is still the task
/// that ran, and an incremental task whether it is still the task that made
/// its `generates`.
///
/// What goes in: the action (the `run` script as written with the values of
/// the `vars.*` and `env.*` it reads filled in — a script that reads other
/// tasks' values at run time is hashed as its template, since those tasks'
/// identities are in `needs`), the environment (the workflow's and the
/// task's), `cwd`, the shell, `when` and `if`, `sources` and `generates`, and
/// the identities of its needs. Left out, as they do not change what a task
/// that succeeded produced: timeouts, retries, limits, semaphores,
/// `continue_on_error`, descriptions. A secret's value is never hashed (only
/// that it is a secret), so the record cannot be used to guess it.
///
/// `parts` hash each of those on their own, to say what changed.
///
/// Kept compact (48 bytes, nothing on the heap): a plan's identity holds its
/// step's kind and each part's name and first 32 bits; the whole hash is made
/// from those when asked for (once per task, for the record). As strings
/// (a 64-digit hash and an array of parts) they were ~450 bytes a task, the
/// largest single cost of a 20,000-task run.
package struct TaskIdentity: Sendable, Equatable {
    /// The first 8 parts' 32-bit hashes, two to a word (a SIMD vector's
    /// 32-byte alignment would pad the identity to 64 bytes).
    private var partHashes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    /// The first 8 parts' names, 4 bits each (`PartName` + 1; 0: none).
    private var partNameCodes: UInt32 = 0
    private var partCount: UInt8 = 0
    private var kind: DependencyGraph.Kind = .task
    /// An identity given as strings (a fan-out member's, made from its
    /// template's and its item; or with parts the compact form cannot name).
    private var written: Shared<Written>?

    private struct Written: Sendable {
        var hash: String
        var parts: [Part]
    }

    /// 64 hex digits.
    package var hash: String {
        if let written { return written.value.hash }
        var whole = SHA256()
        whole.field(kind.rawValue)
        for index in 0..<Int(partCount) {
            whole.field(partName(index).rawValue)
            whole.field(Self.hex8(partHash(index)))
        }
        return whole.finalize()
    }

    /// `run`, `env`, `cwd`, … → 8 hex digits each (enough to say what changed).
    package var parts: [Part] {
        if let written { return written.value.parts }
        return (0..<Int(partCount)).map { Part(name: partName($0).rawValue, hash: Self.hex8(partHash($0))) }
    }

    package struct Part: Sendable, Equatable {
        package var name: String
        package var hash: String
    }

    /// The names a plan's identity has parts for.
    enum PartName: String, CaseIterable {
        case run, sleep, http, env, cwd, shell, when, sources, members, foreach, need, needs
    }

    package init(hash: String, parts: [Part]) {
        written = Shared(Written(hash: hash, parts: parts))
    }

    /// A plan step's identity from its parts, in order.
    init(kind: DependencyGraph.Kind, parts: [(name: PartName, hash: UInt32)]) {
        guard parts.count <= 8 else {
            var whole = SHA256()
            whole.field(kind.rawValue)
            for part in parts {
                whole.field(part.name.rawValue)
                whole.field(Self.hex8(part.hash))
            }
            written = Shared(Written(hash: whole.finalize(), parts: parts.map { Part(name: $0.name.rawValue, hash: Self.hex8($0.hash)) }))
            return
        }
        self.kind = kind
        partCount = UInt8(parts.count)
        for (index, part) in parts.enumerated() {
            setPartHash(index, part.hash)
            partNameCodes |= UInt32(Self.code(of: part.name) + 1) << (4 * UInt32(index))
        }
    }

    private func partHash(_ index: Int) -> UInt32 {
        let word = switch index / 2 {
        case 0: partHashes.0
        case 1: partHashes.1
        case 2: partHashes.2
        default: partHashes.3
        }
        return UInt32(truncatingIfNeeded: word >> (32 * UInt64(index % 2)))
    }

    private mutating func setPartHash(_ index: Int, _ hash: UInt32) {
        let bits = UInt64(hash) << (32 * UInt64(index % 2))
        switch index / 2 {
        case 0: partHashes.0 |= bits
        case 1: partHashes.1 |= bits
        case 2: partHashes.2 |= bits
        default: partHashes.3 |= bits
        }
    }

    private func partName(_ index: Int) -> PartName {
        Self.partNames[Int((partNameCodes >> (4 * UInt32(index))) & 0xf) - 1]
    }

    /// `PartName.allCases` once (each use of `allCases` makes the array anew).
    private static let partNames = PartName.allCases

    private static func code(of name: PartName) -> Int {
        partNames.firstIndex(of: name)!
    }

    /// 8 lowercase hex digits, leading zeros kept: a digest's first 32 bits as `SHA256.finalize` writes them.
    static func hex8(_ value: UInt32) -> String {
        String(unsafeUninitializedCapacity: 8) { digits in
            for position in 0..<8 {
                let nibble = UInt8(truncatingIfNeeded: value >> UInt32(28 - 4 * position)) & 0xf
                digits[position] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
            }
            return 8
        }
    }

    /// Feeds what the identity is made of to `hasher`, without making its
    /// own SHA-256 first (a plan's identity costs no SHA-256 per task).
    func feed(_ hasher: inout PlanIdentityHasher) {
        if let written {
            hasher.add(written.value.hash)
            return
        }
        hasher.add(kind.rawValue)
        hasher.add(word: UInt64(partCount) << 32 | UInt64(partNameCodes))
        hasher.add(word: partHashes.0)
        hasher.add(word: partHashes.1)
        hasher.add(word: partHashes.2)
        hasher.add(word: partHashes.3)
    }

    package static func == (a: TaskIdentity, b: TaskIdentity) -> Bool {
        a.hash == b.hash && a.parts == b.parts
    }

    /// A fan-out member's: its template's identity and its item. For many
    /// members of one fan-out, `FanOutIdentity` works the template's out once.
    package func member(item: String?) -> TaskIdentity {
        FanOutIdentity(template: self).member(item: item)
    }

    /// What differs from `old`, in words: `run`, `env`, `needs`, …
    package func changes(from oldParts: [(name: String, hash: String)]) -> [String] {
        let old = Dictionary(oldParts.map { ($0.name, $0.hash) }, uniquingKeysWith: { first, _ in first })
        var changed = parts.filter { old[$0.name] != $0.hash }.map(\.name)
        let known = Set(parts.map(\.name))
        changed += oldParts.filter { !known.contains($0.name) }.map(\.name)
        return changed
    }
}

/// A fan-out template's identity with its hash and parts worked out once
/// (the compact form makes them anew when asked): each member's identity
/// is made from them and its item.
package struct FanOutIdentity: Sendable {
    private let templateHash: String
    private let templateParts: [TaskIdentity.Part]

    package init(template: TaskIdentity) {
        templateHash = template.hash
        templateParts = template.parts
    }

    package func member(item: String?) -> TaskIdentity {
        var sha = SHA256()
        sha.field(templateHash)
        sha.field(item ?? "")
        var itemHash = SHA256()
        itemHash.update(item ?? "")
        let part = TaskIdentity.Part(name: "item", hash: TaskIdentity.hex8(itemHash.finalizePrefix()))
        return TaskIdentity(hash: sha.finalize(), parts: templateParts + [part])
    }
}

/// Computes every step's identity from the plan's workflow. Only where it
/// is needed (a run's record, `resume`, the incremental dry run), not for
/// every plan: 20,000 tasks take some 0.1 s of hashing.
package enum TaskIdentities {
    /// One hash of every task's identity, in the plan's order of steps: two
    /// plans have the same exactly when each of their tasks does (but for a
    /// 2^-128 chance). All that a killed engine's record keeps of the
    /// identities (`run_killed`'s `plan_identity`), for `resume`, which then
    /// cannot say which task changed, only that one did. Not a SHA-256 per
    /// task: a 20,000-task run would pay ~80 ms at its start.
    package static func planIdentity(_ identities: [String: TaskIdentity], steps names: [String]) -> String {
        var hasher = PlanIdentityHasher()
        for name in names {
            hasher.add(name)
            identities[name]?.feed(&hasher)
        }
        return hasher.hex
    }

    package static func compute(for plan: Plan) -> [String: TaskIdentity] {
        compute(steps: plan.steps, finallySteps: plan.finallySteps, workflow: plan.workflow)
    }

    /// Identities by step name (a fan-out's by its template's name,
    /// `GROUP[*]`), for the main phase and `finally`.
    package static func compute(steps: [PlanStep], finallySteps: [PlanStep], workflow: Workflow) -> [String: TaskIdentity] {
        var computer = Computer(workflow: workflow)
        computer.done.reserveCapacity(steps.count + finallySteps.count)
        for phase in [steps, finallySteps] {
            var byName: [String: Int] = [:]
            for index in phase.indices { byName[phase[index].name] = index }
            computer.steps = phase
            computer.byName = byName
            for index in phase.indices { _ = computer.identity(of: index) }
        }
        return computer.done
    }

    private struct Computer {
        let secrets: Set<String>
        let variables: [String: String]
        let workflowEnvironment: String
        let shell: String
        /// The parts most tasks share (no own env, no cwd, `when: success`,
        /// no globs, the one shell, no needs), hashed once rather than per task.
        let sharedEnvironment: UInt32
        let noCwd: UInt32
        let shellPart: UInt32
        let defaultWhen: UInt32
        let noGlobs: UInt32
        let noNeeds: UInt32
        var steps: [PlanStep] = []
        var byName: [String: Int] = [:]
        var done: [String: TaskIdentity] = [:]
        var visiting: Set<String> = []

        init(workflow: Workflow) {
            secrets = Set(workflow.secrets.map(\.value))
            var variables: [String: String] = [:]
            for variable in workflow.vars { variables[variable.name] = variable.value }
            self.variables = variables
            shell = workflow.shell
            var sha = SHA256()
            for entry in workflow.env {
                sha.field(entry.name)
                sha.field(Self.templateText(entry.value, secrets: secrets, variables: variables))
            }
            let environment = sha.finalize()
            workflowEnvironment = environment
            sharedEnvironment = Self.part { $0.field(environment) }
            noCwd = Self.part { $0.field("") }
            shellPart = Self.part { [shell = workflow.shell] in $0.field(shell) }
            defaultWhen = Self.part { sha in
                sha.field(RunCondition.success.rawValue)
                sha.field("")
            }
            noGlobs = Self.part { $0.field("|") }
            noNeeds = Self.part { _ in }
        }

        /// The first 32 bits (8 hex digits) of what `build` hashes.
        static func part(_ build: (inout SHA256) -> Void) -> UInt32 {
            var sha = SHA256()
            build(&sha)
            return sha.finalizePrefix()
        }

        mutating func identity(of index: Int) -> TaskIdentity {
            let name = steps[index].name
            if let known = done[name] { return known }
            // A cycle cannot pass validation; the guard only keeps recursion finite.
            guard visiting.insert(name).inserted else { return TaskIdentity(hash: "", parts: []) }
            defer { visiting.remove(name) }
            var parts: [(name: TaskIdentity.PartName, hash: UInt32)] = []
            func add(_ partName: TaskIdentity.PartName, _ build: (inout SHA256) -> Void) {
                parts.append((partName, Self.part(build)))
            }
            func add(_ partName: TaskIdentity.PartName, shared hash: UInt32) {
                parts.append((partName, hash))
            }
            let step = steps[index]
            if let task = step.task {
                let (actionName, actionText) = action(task.action)
                add(actionName) { $0.field(actionText) }
                if task.env.isEmpty {
                    add(.env, shared: sharedEnvironment)
                } else {
                    add(.env) { sha in
                        sha.field(workflowEnvironment)
                        for entry in task.env {
                            sha.field(entry.name)
                            sha.field(templateText(entry.value))
                        }
                    }
                }
                if let cwd = task.cwd { add(.cwd) { $0.field(templateText(cwd)) } } else { add(.cwd, shared: noCwd) }
                add(.shell, shared: shellPart)
                if task.when == .success && task.condition == nil {
                    add(.when, shared: defaultWhen)
                } else {
                    add(.when) { sha in
                        sha.field(task.when.rawValue)
                        sha.field(task.condition.map { "\($0.value)" } ?? "")
                    }
                }
                if task.sources.isEmpty && task.generates.isEmpty {
                    add(.sources, shared: noGlobs)
                } else {
                    add(.sources) { sha in
                        for glob in task.sources { sha.field(templateText(glob)) }
                        sha.field("|")
                        for glob in task.generates { sha.field(templateText(glob)) }
                    }
                }
            }
            if step.kind == .group || step.kind == .join {
                let members = namedIdentities(step.members)
                add(.members) { Self.hash(members, into: &$0) }
                if let source = step.fanOutSource { add(.foreach) { $0.field(sourceText(source)) } }
                if let join = step.join { add(.need) { $0.field("\(join.need.value)") } }
            }
            if step.needs.isEmpty {
                add(.needs, shared: noNeeds)
            } else {
                let needs = namedIdentities(step.needs)
                add(.needs) { Self.hash(needs, into: &$0) }
            }
            let result = TaskIdentity(kind: step.kind, parts: parts)
            done[name] = result
            return result
        }

        /// The steps named (members, needs), sorted, each with its whole identity.
        private mutating func namedIdentities(_ names: [String]) -> [(name: String, hash: String)] {
            names.sorted().map { name in (name, byName[name].map { identity(of: $0).hash } ?? "") }
        }

        private static func hash(_ named: [(name: String, hash: String)], into sha: inout SHA256) {
            for step in named {
                sha.field(step.name)
                sha.field(step.hash)
            }
        }

        private func action(_ action: TaskAction) -> (TaskIdentity.PartName, String) {
            switch action {
            case .run(let script): return (.run, templateText(script))
            case .sleep(let duration): return (.sleep, "\(duration)")
            case .http(let request):
                var text = request.method + " " + templateText(request.url) + "\n"
                for header in request.headers { text += header.name + ": " + templateText(header.value) + "\n" }
                text += "\n" + (request.body.map(templateText) ?? "") + "\nexpect \(request.expect)"
                return (.http, text)
            }
        }

        private func sourceText(_ source: FanOutSource) -> String {
            switch source {
            case .list(let items): return "list:" + items.map { "\($0.utf8.count):\($0)" }.joined()
            case .range(let low, let high): return "range:\(low)..\(high)"
            case .records(let items): return "records:" + items.map { String(reflecting: $0) }.joined(separator: "\u{0}")
            case .expression(let template): return "expression:" + templateText(template)
            }
        }

        /// The template as written, then the values of the variables and
        /// environment variables it reads (a secret's as `secret`).
        func templateText(_ template: Template) -> String {
            Self.templateText(template, secrets: secrets, variables: variables)
        }

        static func templateText(_ template: Template, secrets: Set<String>, variables: [String: String]) -> String {
            var text = template.source
            for operand in template.operands {
                switch operand.path {
                case .variable(let name):
                    text += "\u{0}vars.\(name)=" + (secrets.contains(name) ? "secret" : variables[name] ?? "")
                case .environment(let name):
                    text += "\u{0}env.\(name)=" + (secrets.contains(name) ? "secret" : getenv(name).map { String(cString: $0) } ?? "")
                case .host(let fact):
                    // A record on a shared disk may be resumed on another machine.
                    text += "\u{0}host.\(fact.rawValue)=" + HostFacts.value(of: fact).text
                default:
                    break
                }
            }
            return text
        }
    }
}

/// Two 64-bit lanes over bytes (FNV-1a, and a multiply-rotate one): a fast
/// fingerprint of a plan's identities, not a defence against anyone (the
/// workflow's author is trusted; this only notices a change).
package struct PlanIdentityHasher {
    private var first: UInt64 = 0xcbf2_9ce4_8422_2325
    private var second: UInt64 = 0x9e37_79b9_7f4a_7c15

    mutating func add(_ text: String) {
        for byte in text.utf8 { add(byte: byte) }
        add(byte: 0xFF)  // not UTF-8: ends the text, so "ab"+"c" differs from "a"+"bc"
    }

    mutating func add(word: UInt64) {
        var value = word
        for _ in 0..<8 {
            add(byte: UInt8(truncatingIfNeeded: value))
            value >>= 8
        }
    }

    private mutating func add(byte: UInt8) {
        first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        second = ((second ^ UInt64(byte)) &* 0xff51_afd7_ed55_8ccd)
        second = second << 31 | second >> 33
    }

    /// 32 hex digits.
    var hex: String {
        String((first.hexPadded + second.hexPadded))
    }
}

private extension UInt64 {
    var hexPadded: String {
        let digits = String(self, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

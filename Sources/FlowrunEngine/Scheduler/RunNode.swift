import FlowrunModel
import FlowrunEvents

/// One task, group or join while a run is in progress. Owned by the engine's
/// serial queue and addressed by index; tasks of a fan-out are appended when
/// their group starts.
struct RunNode {
    enum Kind { case task, group, join }

    var name: String
    /// What this node waits for, by index (for a member: its own needs only;
    /// the group's needs are met when the group starts).
    var needs: [Int] = []
    /// Nodes that list this one in `needs`.
    var dependents: [Int] = []
    /// Needs not yet settled (+1 for a member until its group starts).
    var unsettledNeeds = 0
    /// The group a task belongs to.
    var group: Int?
    // One-byte fields sit in the 7 bytes an optional Int leaves unused
    // before the next word: a node is 272 bytes, not 320 (× every task).
    var kind: Kind
    var status: TaskStatus = .pending
    var isFinally = false
    /// Joins that count this node as a member.
    var joins: [Int] = []
    /// The step that must settle first, and not fail (PlanStep.runsAfter).
    var runsAfter: Int?
    /// Skipped by its own `if:` (or a `when: failure` with no failed need):
    /// a sequence goes on past it.
    var skippedByOwnCondition = false
    var cancelReason: CancelReason?
    /// The deadline the plan gave this node: a task's per attempt, a
    /// group's or a join's own. Read from the plan step, never recomputed.
    var timeout: Duration?
    var startedAt: Double?
    var finishedAt: Double?

    // Tasks. Definitions are shared, not copied: 100,000 fan-out members
    // point at one template. Read a field through the reference
    // (`definition?.value.timeout`): copying a definition out (a kilobyte)
    // retains every field it has, on every task's hot path.
    var definition: Shared<TaskDefinition>?
    var item: FanOutItem?
    var index: Int?
    /// Whether an attempt wrote to the task's log (a task that printed nothing has none).
    var hasLog = false
    var holdsSlots = false
    /// Settled `succeeded` without running: restored by `resume`, or up to date.
    var reused: ReuseKind?
    var attempt = 0
    var demand: SlotPool.Demand?
    var stash = Stash()
    /// An incremental task about to run: what its state will record if it succeeds.
    var incremental: Shared<IncrementalCheck>?

    // Groups (a fan-out's template and items: `RunEngine.fanOuts`) and
    // joins: their counters behind one reference, nil for a task (~56
    // bytes less for each of 20,000 tasks). Copied when changed while shared.
    private var collective: Collective?

    var members: [Int] {
        get { collective?.members ?? [] }
        _modify { yield &writableCollective().members }
    }
    var unsettledMembers: Int {
        get { collective?.unsettledMembers ?? 0 }
        _modify { yield &writableCollective().unsettledMembers }
    }
    var groupTimedOut: Bool {
        get { collective?.groupTimedOut ?? false }
        _modify { yield &writableCollective().groupTimedOut }
    }

    // Joins.
    var joinDefinition: JoinDefinition? {
        get { collective?.join?.value }
        set { writableCollective().join = newValue.map(Shared.init) }
    }
    var required: Int {
        get { collective?.required ?? 0 }
        _modify { yield &writableCollective().required }
    }
    var succeededMembers: Int {
        get { collective?.succeededMembers ?? 0 }
        _modify { yield &writableCollective().succeededMembers }
    }
    var settledMembers: Int {
        get { collective?.settledMembers ?? 0 }
        _modify { yield &writableCollective().settledMembers }
    }
    var joinTimedOut: Bool {
        get { collective?.joinTimedOut ?? false }
        _modify { yield &writableCollective().joinTimedOut }
    }

    private final class Collective {
        var members: [Int] = []
        var unsettledMembers = 0
        var groupTimedOut = false
        var join: Shared<JoinDefinition>?
        var required = 0
        var succeededMembers = 0
        var settledMembers = 0
        var joinTimedOut = false

        func copy() -> Collective {
            let copy = Collective()
            (copy.members, copy.unsettledMembers, copy.groupTimedOut) = (members, unsettledMembers, groupTimedOut)
            (copy.join, copy.required, copy.succeededMembers, copy.settledMembers, copy.joinTimedOut) =
                (join, required, succeededMembers, settledMembers, joinTimedOut)
            return copy
        }
    }

    /// This node's own `Collective`, made on first write and copied if a
    /// copy of the node shares it (a node keeps value semantics).
    private mutating func writableCollective() -> Collective {
        if collective == nil {
            collective = Collective()
        } else if !isKnownUniquelyReferenced(&collective!) {
            collective = collective!.copy()
        }
        return collective!
    }

    init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }

    /// Whether dependents with `when: success` may run after this node.
    var isOK: Bool {
        switch status {
        case .succeeded: return true
        case .failed, .timedOut: return kind == .task && (definition?.value.continueOnError ?? false)
        default: return false
        }
    }

    /// Whether this node counts as a failure for `when: failure`.
    var isFailure: Bool { status.isFailure }
}

/// What a finished task leaves behind for expressions and joins.
struct Stash {
    var stdout = ""
    /// Set when stdout is longer than `ValueLimit.bytes`: `stdout` then holds
    /// only its end (for the summary and join blocks), never read as the value.
    /// A reference: one pointer per node, as nearly every node has none.
    var oversizedStdout: Shared<OversizedStdout>?

    /// The length of stdout in bytes, whole.
    var stdoutByteCount: Int { oversizedStdout?.value.byteCount ?? stdout.utf8.count }
    var exitCode: Int?
    var duration: Double?
    /// What the last attempt used (peak memory, CPU time).
    var usage: ResourceUsage?
    var outputs: [(key: String, value: String)] = []

    func output(_ key: String) -> String? {
        outputs.last { $0.key == key }?.value
    }
}

/// An immutable value behind one reference, so many nodes can hold it for the price of a pointer.

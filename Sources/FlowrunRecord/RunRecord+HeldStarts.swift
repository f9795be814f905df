import Dispatch
#if canImport(Glibc)
import Glibc
#endif
package import FlowrunEvents

/// One line for an attempt shorter than a moment: `events.jsonl` holds a
/// `task_started` line back for `RunRecord.startHoldSeconds`; if the attempt
/// ends by then, its `task_finished` line carries `started` (and the start's
/// `limits`, `needs`, deadlines) and stands for both. A million short members
/// then cost one line each, not two.
///
/// A start held back is written once the moment has passed (a timer on the
/// engine's queue), or before any other line about the same task, so the
/// lines of one task stay in order; across tasks, a `task_started` line may
/// come after lines of others with a later `elapsed`, by at most the moment.
/// What it costs: a reader of the file (live `flowrun show`, `logs -f`,
/// `tail -f`) sees a task running a moment late, and a flowrun killed with
/// SIGKILL leaves no line for an attempt that started in its last moment.
/// `--output json` is not held back: it prints every `task_started` at once.
extension RunRecord {
    /// How long a start is held back: long enough for nearly every short task
    /// (`true`, `sleep 0`, `echo`) to end within it, short enough not to be
    /// seen by a person watching.
    package static let startHoldSeconds = 0.1

    struct HeldStarts {
        /// Starts in the order they came, by sequence number (`base` is the
        /// sequence of `events[0]`); nil once written or merged. Those
        /// before `head` are all nil.
        var events: [RunEvent?] = []
        var heldAt: [Double] = []
        var head = 0
        var base = 0
        var sequenceOf: [String: Int] = [:]
        var timerArmed = false

        /// Moves `head` past the starts no longer held; drops them from the
        /// arrays once they are most of it.
        mutating func dropWrittenFront() {
            while head < events.count, events[head] == nil { head += 1 }
            if head == events.count {
                base += head
                events.removeAll(keepingCapacity: true)
                heldAt.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 && head * 2 > events.count {
                // Soon: each slot is a whole RunEvent (~700 bytes), written or not.
                base += head
                events.removeFirst(head)
                heldAt.removeFirst(head)
                head = 0
            }
        }
    }

    /// Holds task starts back: `later(seconds, work)` runs `work` on the
    /// engine's queue after `seconds`. Without it, every start is written
    /// as it comes.
    package func holdsStarts(scheduling later: @escaping (Double, @escaping @Sendable () -> Void) -> Void) {
        scheduleLater = later
    }

    /// Takes a `task_started` into the held ones; false for anything else,
    /// or when starts are not held back.
    func holdsStart(_ event: RunEvent) -> Bool {
        guard scheduleLater != nil, event.kind == .taskStarted, let task = event.subject else { return false }
        // One lookup: a start of the same task still held (an earlier attempt's) is written first.
        if let earlier = held.sequenceOf.updateValue(held.base + held.events.count, forKey: task),
           let start = held.events[earlier - held.base] {
            held.events[earlier - held.base] = nil
            append(start, spilling: true)
        }
        held.events.append(event)
        held.heldAt.append(Self.monotonicSeconds())
        armHeldStartsTimer()
        return true
    }

    /// The held start of `task`, no longer held; nil if none.
    func releaseHeldStart(of task: String) -> RunEvent? {
        guard !held.sequenceOf.isEmpty, let sequence = held.sequenceOf.removeValue(forKey: task) else { return nil }
        let start = held.events[sequence - held.base]
        held.events[sequence - held.base] = nil
        held.dropWrittenFront()
        return start
    }

    /// Adds the starts held for a moment (or, with `all`, every one) to the
    /// lines waiting to be written.
    func writeDueStarts(all: Bool = false) {
        guard !held.sequenceOf.isEmpty else { return }
        let due = Self.monotonicSeconds() - Self.startHoldSeconds
        var lines: [RunEvent] = []
        var position = held.head
        while position < held.events.count {
            if let start = held.events[position] {
                guard all || held.heldAt[position] <= due else { break }
                lines.append(start)
                held.sequenceOf[start.subject ?? ""] = nil
                if !logsInMemory.isEmpty { logsInMemory.removeValue(forKey: start.subject ?? "")?.spill() }
                held.events[position] = nil
            }
            position += 1
        }
        held.dropWrittenFront()
        // After the lines waiting: any of them about the same task came before its start was held.
        pendingEvents.append(contentsOf: lines)
    }

    private func armHeldStartsTimer() {
        guard !held.timerArmed, let scheduleLater, held.head < held.events.count else { return }
        let first = held.head
        held.timerArmed = true
        let wait = max(0.001, held.heldAt[first] + Self.startHoldSeconds - Self.monotonicSeconds())
        scheduleLater(wait) { [weak self] in
            guard let self else { return }
            self.held.timerArmed = false
            self.writePendingEvents()
            self.armHeldStartsTimer()
        }
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

extension RunEvent {
    /// `finished` as the one line that stands for this start and that end.
    package func mergedInto(_ finished: RunEvent) -> RunEvent {
        guard case .taskStarted(let start) = payload, case .taskFinished(var end) = finished.payload else { return finished }
        end.start = RunEvent.MergedStart(elapsed: elapsed, start)
        var merged = finished
        merged.payload = .taskFinished(end)
        return merged
    }
}

import Dispatch

/// Work the engine runs once its current step is over, without a trip
/// through its Dispatch queue for each piece: an attempt that ends the
/// moment it starts (`sleep: 0s`) must still not complete inside `start()`, and a million `sleep: 0s`
/// members each completed through `queue.async` spent a tenth of their
/// time in Dispatch and wrote `events.jsonl` once per member.
///
/// Pieces added while the queue runs them run in the same turn, up to
/// `perTurn`: then the turn ends, so a timer, a signal or a reaped child
/// still gets its turn on the queue. Holds at most one piece per running
/// attempt.
final class ImmediateWork: @unchecked Sendable {
    // @unchecked: used only on `queue` (checked at `add`; `runTurn` runs there).
    private let queue: DispatchQueue
    private var pieces: [() -> Void] = []
    private var scheduled = false
    private let perTurn = 1024

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    /// Runs `piece` on the queue after the current step.
    func add(_ piece: @escaping () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        pieces.append(piece)
        guard !scheduled else { return }
        scheduled = true
        queue.async { self.runTurn() }
    }

    private func runTurn() {
        var next = 0
        // Pieces added by these run in this turn too, up to `perTurn` in all.
        while next < pieces.count, next < perTurn {
            let piece = pieces[next]
            next += 1
            piece()
        }
        pieces.removeFirst(next)
        if pieces.isEmpty {
            scheduled = false
        } else {
            queue.async { self.runTurn() }
        }
    }
}

import FlowrunEvents
import FlowrunRecord

/// A running fan-out: where its feed is, how many members are out, and how
/// the settled ones ended — counters, not a member list, so a group of a
/// million members costs the same as one of ten (SPEC §4's status rules
/// need only these counts).
final class FanOutProgress {
    var feed: FanOutFeed
    /// How many members may be unsettled at once: enough to fill every slot
    /// the group can use, and a few waiting so a freed slot never idles.
    let window: Int
    /// Whether members are kept after they settle (`groups.G.results` or a
    /// join over the group reads their stashes); otherwise they are let go.
    let keepsMembers: Bool
    var exhausted = false
    /// Set while members are being made: a member that settles at once does
    /// not start another round of making (no recursion a million deep).
    var refilling = false
    /// Members listed beside `foreach`: settled and counted with the made ones.
    var staticMembers = 0
    /// Members made from items so far, and members not yet settled (static ones too).
    var created = 0
    var unsettled = 0
    /// Members waiting for a semaphore pool of their own (a family's, named
    /// per member, SPEC §15): they do not hold the window, or one outer
    /// item's full pool would keep the next items' members from being made
    /// and their pools from running side by side. At most `maximumParked`.
    var parked = Set<Int>()
    static let maximumParked = 10_000
    var succeeded = 0
    var skipped = 0
    /// Of `skipped`, those skipped by their own `if:` (or `when: failure`).
    var skippedByOwnCondition = 0
    var settled = 0
    /// Members that failed or timed out without `continue_on_error`.
    var failed = 0
    /// The first member (by index) with a cancel reason other than `join_settled`.
    var firstStop: (member: Int, reason: CancelReason)?
    /// Set when the group itself was cancelled (a join's quorum, `stop`):
    /// members made from then on settle cancelled at once.
    var drainReason: CancelReason?
    /// In a `sequential: true` group: the last member made, what the next one runs after.
    var previous: Int?
    /// A settled member kept only because the next one (not made yet) must read it.
    var retireWhenNextMade: Int?
    /// Member names and items in index order, as the summary lists them (JSON strings, comma-separated).
    var names = RecordSpill()
    var items = RecordSpill()
    /// Summary rows of settled members, held while the fan-out is small so
    /// they are written in index order; nil once it has more members than
    /// `plainRowsKeptUpTo`: then rows go out as members settle, and those of
    /// plain successes (see `RunEngine.plainSuccess`) are left out.
    var heldRows: [(member: Int, row: [UInt8], plain: PlainSuccess?)]? = []
    /// Members whose row is left out of the summary, and how many of them
    /// `resume` restored or were up to date (each one's `task_finished`
    /// in `events.jsonl` says which).
    var rowsLeftOut = 0
    var leftOutRestored = 0
    var leftOutUpToDate = 0

    /// How a member whose row is left out succeeded.
    enum PlainSuccess {
        case ran
        case reused(ReuseKind)
    }

    func leaveOutRow(of success: PlainSuccess) {
        rowsLeftOut += 1
        switch success {
        case .ran: break
        case .reused(.restored): leftOutRestored += 1
        case .reused(.upToDate): leftOutUpToDate += 1
        }
    }
    static let plainRowsKeptUpTo = 1_000

    /// The pool's resource for the group's own limit, if it has one.
    let groupResource: Int?

    init(feed: FanOutFeed, window: Int, keepsMembers: Bool, groupResource: Int?) {
        self.feed = feed
        self.window = window
        self.keepsMembers = keepsMembers
        self.groupResource = groupResource
    }
}

import FlowrunValues

/// What a join reports when it completes (SPEC §5): its outcome and, member
/// by member, each one's status, duration and stash. A group in `wait` is
/// not one member here but each of its members, named by its item. The
/// engine builds it at the moment the join completes; `JoinBlock` draws it
/// for the tty and plain views, `json(limit:)` writes it for the
/// `join_completed` event (capped) and the run record (whole).
package struct JoinReport: Sendable {
    /// How a member stands in the block: its status, told the way a user reads it.
    package enum Outcome: String, Sendable {
        case succeeded
        /// Failed with `continue_on_error: true`: counts as succeeded for `need`.
        case failedAllowed = "failed_allowed"
        case failed
        case timedOut = "timed_out"
        case cancelled
        case skipped
        /// Still running when the join had what it needed: cancelled, not a failure.
        case notNeeded = "not_needed"
        /// Still running (or waiting) when the join's deadline passed.
        case missing
        /// Still running (or waiting) when the join failed: left to finish, as make -k would.
        case stillRunning = "still_running"

        /// `failed (allowed)`, `not needed`: words for people.
        package var text: String {
            switch self {
            case .failedAllowed: return "failed (allowed)"
            case .timedOut: return "timed out"
            case .notNeeded: return "not needed"
            case .stillRunning: return "still running"
            default: return rawValue
            }
        }
    }

    /// One value of a member's stash: `stdout`, an output key, or a field `report:` named.
    package struct Value: Sendable {
        package var key: String
        package var text: String
        /// Whether it is a member's stdout (shown as its last lines, not as `key=value`).
        package var isStdout: Bool

        package init(key: String, text: String, isStdout: Bool) {
            self.key = key
            self.text = text
            self.isStdout = isStdout
        }
    }

    package struct Member: Sendable {
        package var name: String
        /// The group it belongs to when the join waits for that group.
        package var group: String?
        /// A fan-out member's item.
        package var item: String?
        package var outcome: Outcome
        package var duration: Double?
        package var values: [Value]
        /// The member's log (all it printed), when it printed anything.
        package var log: String?


        package init(name: String, group: String? = nil, item: String? = nil, outcome: Outcome, duration: Double? = nil, values: [Value], log: String? = nil) {

            self.name = name

            self.group = group

            self.item = item

            self.outcome = outcome

            self.duration = duration

            self.values = values

            self.log = log

        }

        /// How the block names it: `fetch[2] b.txt` for a fan-out member
        /// named by its index, its own name otherwise.
        package var label: String {
            guard let item, let group, name.hasPrefix(group + "["), name.hasSuffix("]") else { return name }
            return name + " (" + item + ")"
        }
    }

    package var name: String
    package var status: TaskStatus
    package var timedOut: Bool
    /// Members as `need` counts them (a group is one).
    package var counted: Int
    package var succeeded: Int
    package var required: Int
    package var duration: Double
    /// Members (as counted) still unsettled at a deadline.
    package var missing: [String]
    /// Every member shown, groups opened up, in `wait` order.
    package var members: [Member]
    /// The file in the run record holding this report whole.
    package var path: String?

    package init(name: String, status: TaskStatus, timedOut: Bool, counted: Int, succeeded: Int, required: Int, duration: Double, missing: [String], members: [Member], path: String? = nil) {
        self.name = name
        self.status = status
        self.timedOut = timedOut
        self.counted = counted
        self.succeeded = succeeded
        self.required = required
        self.duration = duration
        self.missing = missing
        self.members = members
        self.path = path
    }

    /// How many shown members ended in each outcome, in a stable order.
    package func outcomeCounts(of members: ArraySlice<Member>) -> [(outcome: Outcome, count: Int)] {
        var counts: [Outcome: Int] = [:]
        for member in members { counts[member.outcome, default: 0] += 1 }
        let order: [Outcome] = [.succeeded, .failedAllowed, .failed, .timedOut, .notNeeded, .missing, .stillRunning, .cancelled, .skipped]
        return order.compactMap { outcome in counts[outcome].map { (outcome, $0) } }
    }

    /// The report as JSON, everything whole: the run record's `joins/JOIN.json`.
    package func json() -> [UInt8] {
        var json = JSONObjectWriter()
        json.add("join", name)
        json.add("status", status.rawValue)
        json.add("timed_out", timedOut)
        json.add("members", counted)
        json.add("succeeded", succeeded)
        json.add("required", required)
        json.add("duration", duration)
        json.add("missing", missing)
        addMembers(to: &json, limit: nil, valueBytes: nil)
        return json.finish()
    }

    /// `results` (the first `limit` members, each value cut to `valueBytes`
    /// bytes, `"cut": true` then), `more` (the rest counted by outcome) and
    /// `report_path` (the file holding it whole).
    func addMembers(to json: inout JSONObjectWriter, limit: Int?, valueBytes: Int?) {
        let shown = members.prefix(limit ?? members.count)
        json.add("results") { bytes in
            bytes.append(UInt8(ascii: "["))
            for (position, member) in shown.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += Self.memberJSON(member, valueBytes: valueBytes)
            }
            bytes.append(UInt8(ascii: "]"))
        }
        if shown.count < members.count {
            var more = JSONObjectWriter()
            for (outcome, count) in outcomeCounts(of: members[shown.count...]) { more.add(key: outcome.rawValue, count) }
            let moreJSON = more.finish()
            json.add("more") { $0 += moreJSON }
        }
        json.add("report_path", path)
    }

    private static func memberJSON(_ member: Member, valueBytes: Int?) -> [UInt8] {
        var json = JSONObjectWriter()
        json.add("name", member.name)
        json.add("group", member.group)
        json.add("item", member.item)
        json.add("outcome", member.outcome.rawValue)
        json.add("duration", member.duration)
        json.add("log", member.log)
        json.add("values") { bytes in
            bytes.append(UInt8(ascii: "["))
            for (position, value) in member.values.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                var object = JSONObjectWriter()
                object.add("key", value.key)
                let cut = valueBytes.map { value.text.utf8.count > $0 } ?? false
                object.add("value", cut ? Self.prefix(value.text, bytes: valueBytes!) : value.text)
                if cut { object.add("cut", true) }
                bytes += object.finish()
            }
            bytes.append(UInt8(ascii: "]"))
        }
        return json.finish()
    }

    /// At most `bytes` bytes of `text`, never half a character.
    static func prefix(_ text: String, bytes: Int) -> String {
        var count = 0
        var end = text.startIndex
        for index in text.indices {
            let size = text[index].utf8.count
            if count + size > bytes { break }
            count += size
            end = text.index(after: index)
        }
        return String(text[..<end])
    }
}

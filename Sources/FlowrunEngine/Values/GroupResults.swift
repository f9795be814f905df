package import FlowrunValues
package import FlowrunEvents

/// The value of `groups.G.results`: a compact JSON array, one object per member in index order.
///
/// Each object is `{"name", "item", "status", "stdout", "outputs"}` in that
/// order: `item` is the member's fan-out item as text (what `${{ item }}`
/// gave it), or null for a static member; `outputs` is an object of the
/// keys it wrote, in first-written order.
package enum GroupResults {
    /// One member as the array shows it.
    package struct Member: Sendable {
        package var name: String
        package var item: String?
        package var status: TaskStatus
        package var stdout: String
        package var outputs: [(key: String, value: String)]

        package init(name: String, item: String?, status: TaskStatus, stdout: String, outputs: [(key: String, value: String)]) {
            self.name = name
            self.item = item
            self.status = status
            self.stdout = stdout
            self.outputs = outputs
        }
    }

    package static func json(_ members: [Member]) -> String {
        var text = "["
        for (index, member) in members.enumerated() {
            if index > 0 { text += "," }
            text += "{\"name\":"
            JSONValue.writeQuoted(member.name, to: &text)
            text += ",\"item\":"
            if let item = member.item { JSONValue.writeQuoted(item, to: &text) } else { text += "null" }
            text += ",\"status\":"
            JSONValue.writeQuoted(member.status.rawValue, to: &text)
            text += ",\"stdout\":"
            JSONValue.writeQuoted(member.stdout, to: &text)
            text += ",\"outputs\":{"
            for (position, output) in member.outputs.enumerated() {
                if position > 0 { text += "," }
                JSONValue.writeQuoted(output.key, to: &text)
                text += ":"
                JSONValue.writeQuoted(output.value, to: &text)
            }
            text += "}}"
        }
        return text + "]"
    }

    /// The expression value of `groups.G.results`.
    package static func value(_ members: [Member]) -> ExpressionValue { .json(json(members)) }
}

/// Objects kept per plan node (a fan-out's progress, by its group's
/// index), found by position rather than by hashing: read several times
/// for every member a fan-out makes. Plan nodes are few next to members,
/// so a slot per node costs little.
struct ByGroupIndex<Value: AnyObject> {
    private var slots: [Value?] = []

    subscript(index: Int) -> Value? {
        get { index < slots.count ? slots[index] : nil }
        set {
            if index >= slots.count {
                guard newValue != nil else { return }
                slots += Array(repeating: nil, count: index + 1 - slots.count)
            }
            slots[index] = newValue
        }
    }

    /// The indices that hold a value, in order.
    var keys: [Int] { slots.indices.filter { slots[$0] != nil } }

    var values: [Value] { slots.compactMap { $0 } }
}

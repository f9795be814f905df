/// A value stored once and pointed at: a task definition is about a kilobyte
/// inline, and the plan, the run's nodes and 100,000 fan-out members would
/// each hold a copy otherwise.
final class Shared<Value: Sendable>: Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}

/// A value stored once and pointed at: a task definition is about a kilobyte
/// inline, and the plan, the run's nodes and 100,000 fan-out members would
/// each hold a copy otherwise.
package final class Shared<Value: Sendable>: Sendable {
    package let value: Value

    package init(_ value: Value) {
        self.value = value
    }
}

import Testing

/// Runs `body` once for each of `items`, on `lanes` child tasks at once:
/// lane `i` takes items `i`, `i + lanes`, … one after another.
///
/// For a serialized test whose cases are independent runs and assert no
/// time (only hang guards): alone on two cores, one case at a time leaves
/// a core idle. The lanes are child tasks, so an `#expect` in `body` is
/// the test's (they inherit its task-local values), and all of them have
/// ended when this returns; the first error thrown cancels the rest.
func onLanes<Item: Sendable>(
    _ lanes: Int, _ items: [Item], _ body: @escaping @Sendable (Item) throws -> Void
) async throws {
    precondition(lanes > 0)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<min(lanes, items.count) {
            group.addTask {
                for item in stride(from: lane, to: items.count, by: lanes).map({ items[$0] }) {
                    try Task.checkCancellation()
                    try body(item)
                    // `body` holds its thread throughout: between items, let
                    // another suite's step (SlurmTests', also ahead) have it.
                    await Task.yield()
                }
            }
        }
        try await group.waitForAll()
    }
}

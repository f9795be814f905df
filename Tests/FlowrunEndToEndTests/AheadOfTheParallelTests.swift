import Synchronization
import Testing

/// Runs a serialized suite in a task of high priority, so it is not starved
/// by the parallel tests.
///
/// Our tests are synchronous: each holds a thread of Swift's cooperative
/// pool (as wide as the machine has cores, 2 in CI) while it waits for its
/// child. The parallel suites queue hundreds of tests on that pool at once,
/// and a serialized suite's next test is queued behind all of them: in CI
/// `RunEndToEnd` got through one test in the first 89 s, and its last 150 s
/// ran alone on one core (docs/BENCHMARKS.md, "Test suite time"). At a
/// higher priority its steps are taken from their own queue and threads,
/// ahead of the crowd, so it runs beside the others from the start.
struct AheadOfTheParallelTests: SuiteTrait, TestScoping {
    /// The suite once, not each test: its children inherit the priority.
    var isRecursive: Bool { false }

    /// One scope: the suite's own step, which runs all of its tests.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite ? self : nil
    }

    /// The priority the runner gave the suite, which its parallel tests
    /// have too; nil until a suite with this trait started.
    static let crowdPriority = Mutex<TaskPriority?>(nil)

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        Self.crowdPriority.withLock { $0 = Task.currentPriority }
        // An unstructured task: a task group's child given `.high` here still
        // ran at the runner's `.medium`. It inherits the task-local values
        // (the serialized flag, the current test, where issues go), our
        // cancellation is passed on, and it is awaited before we return, so
        // `function` never outlives this call.
        try await withoutActuallyEscaping(function) { function in
            let suite = Task(priority: .high) { try await function() }
            try await withTaskCancellationHandler { try await suite.value } onCancel: { suite.cancel() }
        }
    }
}

extension SuiteTrait where Self == AheadOfTheParallelTests {
    /// See `AheadOfTheParallelTests`.
    static var aheadOfTheParallelTests: Self { Self() }
}

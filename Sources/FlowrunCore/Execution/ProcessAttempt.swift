import Dispatch

extension RunEngine {
    func makeProcessAttempt(for index: Int, script: Template, completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        FailedAttempt(reason: "processes are not wired yet", queue: queue, completion: completion)
    }
}

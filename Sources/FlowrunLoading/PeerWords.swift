import FlowrunYAML

/// The keys of go-task, just, make, GitHub Actions, Dagu and Argo Workflows
/// that flowrun spells differently (SPEC §10). An unknown key that is one of
/// them gets a pointer to flowrun's own word — "did you mean 'needs'?" — with
/// the value converted where the units differ (`timeout-minutes: 5` →
/// `timeout: 5m`), or where flowrun's word lives when it belongs elsewhere
/// (`for:` on a task: a fan-out is a group's `foreach:`).
package enum PeerWords {
    /// Peer key → flowrun's keys, the first that the mapping allows wins.
    package static let pointers: [String: [String]] = [
        "deps": ["needs"], "depends": ["needs"], "depends_on": ["needs"], "dependencies": ["needs"],
        "dir": ["cwd"], "working-directory": ["cwd"],
        "cmds": ["run"], "cmd": ["run"], "script": ["run"], "command": ["run"],
        "timeout-minutes": ["timeout"], "timeoutSec": ["timeout"],
        "retry": ["retries"], "retryPolicy": ["retries"], "retryStrategy": ["retries"],
        "ignore_error": ["continue_on_error"], "continueOn": ["continue_on_error"],
        "parallelism": ["concurrency", "max_parallel"], "maxConcurrent": ["concurrency", "max_parallel"],
        "for": ["foreach"], "withItems": ["foreach"], "withParam": ["foreach"], "parallel": ["foreach"],
        "strategy": ["matrix"],
        "handlerOn": ["finally"], "onExit": ["finally"], "defer": ["finally"],
    ]

    /// Where a flowrun key is written, for a peer key used in the wrong place.
    private static let places: [String: String] = [
        "needs": "a task's or a group's 'needs:'",
        "cwd": "a task's 'cwd:'",
        "run": "a task's 'run:'",
        "timeout": "'timeout:' (a duration) on a task, a group, a join or the workflow",
        "retries": "a task's 'retries:'",
        "continue_on_error": "a task's 'continue_on_error:'",
        "concurrency": "a group's 'concurrency:'",
        "max_parallel": "'max_parallel:' at the top of the file",
        "foreach": "a group's 'foreach:' with 'task:' (a fan-out is a group)",
        "matrix": "a group's 'matrix:' with 'task:' (a fan-out is a group)",
        "finally": "the top-level 'finally:' (tasks that run after everything else, whatever happened)",
    ]

    /// " (did you mean 'needs'? …)" for a peer's key, or nil when `key` is
    /// none of them. `allowed` is what the mapping takes, `value` the key's value.
    static func hint(for key: String, value: YAMLNode, allowed: [String]) -> String? {
        guard let words = pointers[key] else { return nil }
        guard let word = words.first(where: allowed.contains) else {
            return " (flowrun's word for it is \(places[words[0]] ?? "'\(words[0])'"))"
        }
        return " (did you mean '\(suggestion(word, for: key, value: value))'? flowrun's word for it)"
    }

    /// `timeout: 5m` for `timeout-minutes: 5`, `retries: 3` for a
    /// `retryStrategy: {limit: 3}`; else the bare key.
    private static func suggestion(_ word: String, for key: String, value: YAMLNode) -> String {
        switch (key, value.scalar?.double) {
        case ("timeout-minutes", let minutes?) where minutes > 0: return "timeout: \(number(minutes))m"
        case ("timeoutSec", let seconds?) where seconds > 0: return "timeout: \(number(seconds))s"
        default: break
        }
        if word == "retries", let limit = value.mapping?.first(where: { $0.key.scalar?.text == "limit" })?.value.scalar?.int {
            return "retries: \(limit)"
        }
        if word == "retries", let count = value.scalar?.int { return "retries: \(count)" }
        return word
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// GitHub Actions' status checks in `if:` and the `when:` that says the same.
    package static let statusFunctions = ["always()": "always", "success()": "success", "failure()": "failure"]

    /// The message for `if: always()` (also inside `${{ }}`), or nil when
    /// `text` is no status check.
    package static func statusCheckMessage(_ text: String) -> String? {
        var bare = text.trimmingWhitespace
        if bare.hasPrefix("${{") && bare.hasSuffix("}}") {
            bare = String(bare.dropFirst(3).dropLast(2)).trimmingWhitespace
        }
        if let when = statusFunctions[bare] {
            return "if: \(bare) is GitHub Actions' status check; flowrun says it with 'when:' (did you mean 'when: \(when)'?)"
        }
        if bare == "cancelled()" {
            return "if: cancelled() is GitHub Actions' status check; flowrun has none: a 'finally:' task runs after a cancelled run too"
        }
        return nil
    }
}

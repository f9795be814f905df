#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues

/// The little of a past run's record that `flowrun resume` needs, read from
/// its `summary.json`: where it ran and from which file, how it ended, and
/// each task's status, identity and stash. `RunHistory` finds the run.
package struct ResumeSource: Sendable {
    package var runID: String
    /// `BASE/RUN_ID`.
    package var directory: String
    package var workflow: String
    /// The workflow file as given, and as an absolute path (when recorded).
    package var file: String
    package var workflowPath: String?
    /// flowrun's working directory during the run.
    package var cwd: String?
    package var exitCode: Int
    /// `--only` of the run.
    package var only: [String]
    package var tasks: [Task]
    /// Final status of each group and join, by name.
    package var groupStatus: [String: String]
    /// A big fan-out's template identity (hash and parts), for its members
    /// that have no row (`Task.leftOut`): theirs is this with their item.
    package var memberIdentity: [String: (hash: String, parts: [(name: String, hash: String)])] = [:]
    package var joinStatus: [String: String]
    /// Set when the run's engine was killed before its summary.json
    /// (`ResumeSource+KilledRun.swift`): one hash of every task's identity,
    /// in place of each task's identity and stash, which the record lacks.
    package var planIdentity: String?

    package struct Task: Sendable {
        package var name: String
        package var status: String
        package var phase: String
        package var group: String?
        package var item: String?
        package var stdout: String
        package var exitCode: Int?
        package var duration: Double?
        package var outputs: [(key: String, value: String)]
        package var identity: String?
        /// Part name → 8 hex digits (see `TaskIdentity`).
        package var identityParts: [(name: String, hash: String)]
        /// A stdout over 1 MiB: the record's file holding it whole (the
        /// summary keeps only its end), and its size.
        package var wholeStdout: (file: String, byteCount: Int)?
        /// A plain success of a big fan-out, with no row of its own in the summary.
        package var leftOut = false
    }

    package struct Problem: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    /// Reads run `id` of `history` through a held handle on its folder. The
    /// record must be your own (root's own too: resume runs the workflow it
    /// names as you, so another user's record is refused).
    package static func read(_ id: String, in history: RunHistory) throws(Problem) -> ResumeSource {
        let directory = history.folderPath(id)
        let folder = history.openFolder(id)
        guard folder >= 0 else {
            throw Problem(description: "cannot resume from \(directory): \(String(cString: strerror(errno)))")
        }
        defer { close(folder) }
        var info = stat()
        guard fstat(folder, &info) == 0, info.st_uid == geteuid() else {
            throw Problem(description: "cannot resume \(id): its record \(directory) belongs to uid \(info.st_uid), not to you (uid \(geteuid())); resume runs the workflow a record names as you, so only your own records")
        }
        guard let bytes = RecordFile.read(folder, "summary.json", limit: nil) else {
            if errno == ENOENT, let killed = readKilledRun(folder: folder, directory: directory) { return killed }
            let reason = errno == ENOENT
                ? "it has no summary.json (the run was killed before it could write one, or is still running)"
                : "its summary.json is not a plain file"
            throw Problem(description: "cannot resume from \(directory): \(reason)")
        }
        guard case .object(let members)? = JSONValue.parse(String(decoding: bytes, as: UTF8.self)) else {
            throw Problem(description: "cannot resume from \(directory): its summary.json is not JSON")
        }
        let summary = Fields(members)
        var source = ResumeSource(
            runID: summary.string("run_id") ?? String(directory.split(separator: "/").last ?? ""),
            directory: directory, workflow: summary.string("workflow") ?? "", file: summary.string("file") ?? "",
            workflowPath: summary.string("workflow_path"), cwd: summary.string("cwd"), exitCode: summary.int("exit_code") ?? 1,
            only: summary.strings("only"), tasks: [], groupStatus: [:], joinStatus: [:])
        for case .object(let task) in summary.array("tasks") {
            let fields = Fields(task)
            guard let name = fields.string("name"), let status = fields.string("status") else { continue }
            var outputs: [(key: String, value: String)] = []
            if case .object(let pairs)? = fields.value("outputs") {
                for pair in pairs { if case .string(let value) = pair.value { outputs.append((pair.key, value)) } }
            }
            var parts: [(name: String, hash: String)] = []
            if case .object(let pairs)? = fields.value("identity_parts") {
                for pair in pairs { if case .string(let value) = pair.value { parts.append((pair.key, value)) } }
            }
            source.tasks.append(Task(
                name: name, status: status, phase: fields.string("phase") ?? "main", group: fields.string("group"), item: fields.string("item"),
                stdout: fields.string("stdout") ?? "", exitCode: fields.int("exit_code"), duration: fields.double("duration"),
                outputs: outputs, identity: fields.string("identity"), identityParts: parts,
                wholeStdout: wholeStdout(log: fields.string("log"), attempts: fields.int("attempts"), in: folder, shownAs: directory)))
        }
        var named: Set<String>?
        for case .object(let group) in summary.array("groups") {
            let fields = Fields(group)
            guard let name = fields.string("name") else { continue }
            source.groupStatus[name] = fields.string("status") ?? ""
            guard (fields.int("rows_left_out") ?? 0) > 0 else { continue }
            // Members with no row succeeded plainly: empty stash, exit 0.
            if named == nil { named = Set(source.tasks.map(\.name)) }
            let items = fields.array("items")
            for (offset, member) in fields.array("members").enumerated() {
                guard case .string(let member) = member, !named!.contains(member) else { continue }
                var item: String?
                if offset < items.count, case .string(let text) = items[offset] { item = text }
                var task = Task(
                    name: member, status: "succeeded", phase: "main", group: name, item: item, stdout: "", exitCode: 0, duration: nil,
                    outputs: [], identity: nil, identityParts: [], wholeStdout: nil)
                task.leftOut = true
                source.tasks.append(task)
            }
            if let hash = fields.string("member_identity") {
                var parts: [(name: String, hash: String)] = []
                if case .object(let pairs)? = fields.value("member_identity_parts") {
                    for pair in pairs { if case .string(let value) = pair.value { parts.append((pair.key, value)) } }
                }
                source.memberIdentity[name] = (hash, parts)
            }
        }
        for case .object(let join) in summary.array("joins") {
            let fields = Fields(join)
            if let name = fields.string("name") { source.joinStatus[name] = fields.string("status") ?? "" }
        }
        return source
    }

    /// `logs/SHARD/NAME.log.N.stdout` of the last attempt (`logs/NAME…` in
    /// a record made before sharding), when the stdout was long enough to be
    /// kept whole beside the log.
    private static func wholeStdout(log: String?, attempts: Int?, in run: Int32, shownAs directory: String) -> (file: String, byteCount: Int)? {
        guard let log, let attempts, attempts > 0, let name = log.split(separator: "/").last.map(String.init) else { return nil }
        let folders = (RecordFileName.shard(ofFile: name).map { ["logs/" + $0 + "/"] } ?? []) + ["logs/"]
        for folder in folders {
            let relative = folder + name + ".\(attempts).stdout"
            var info = stat()
            if fstatat(run, relative, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG {
                return (directory + "/" + relative, Int(info.st_size))
            }
        }
        return nil
    }

    /// An object's members by key.
    private struct Fields {
        var values: [String: JSONValue] = [:]

        init(_ members: [JSONValue.Member]) {
            for member in members { values[member.key] = member.value }
        }

        func value(_ key: String) -> JSONValue? { values[key] }

        func string(_ key: String) -> String? {
            if case .string(let text)? = values[key] { return text }
            return nil
        }

        func int(_ key: String) -> Int? {
            if case .number(let text)? = values[key] { return Int(text) }
            return nil
        }

        func double(_ key: String) -> Double? {
            if case .number(let text)? = values[key] { return Double(text) }
            return nil
        }

        func array(_ key: String) -> [JSONValue] {
            if case .array(let items)? = values[key] { return items }
            return []
        }

        func strings(_ key: String) -> [String] {
            array(key).compactMap { if case .string(let text) = $0 { return text } else { return nil } }
        }
    }
}

import FlowrunValues
import FlowrunPlanning
import FlowrunEvents
import FlowrunRecord

/// `summary.json`: the final state of every task, group and join.
extension RunEngine {
    /// Writes the summary as it goes, one task at a time. Nodes are read
    /// field by field: a node read whole is a copy (some 20 references retained).
    func writeSummary(into file: inout ChunkedFileWriter) {
        var counts = JSONObjectWriter()
        for (status, count) in statusCounts() { counts.add(key: status.rawValue, count) }
        let countsJSON = counts.finish()
        var json = JSONObjectWriter()
        json.add("run_id", record.runID)
        json.add("workflow", plan.workflow.name)
        json.add("file", plan.workflow.file)
        json.add("exit_code", Int(finalExitCode ?? exitCode()))
        json.add("duration", elapsed)
        json.add("stopped_by", killedBy != nil ? "killed" : stopping?.rawValue)
        json.add("signal", killedBy.map(Int.init))
        json.add("resumed_from", reuse.resumedFrom)
        json.add("workflow_path", Self.absolutePath(plan.workflow.file))
        json.add("cwd", Self.currentDirectory())
        if !plan.only.isEmpty { json.add("only", plan.only) }
        json.add("console_lines_dropped", ConsoleWriter.droppedLines)  // so far: the console is not the record
        json.add("counts") { $0 += countsJSON }
        file.bytes += shown(json: json.finish())
        file.bytes.removeLast()  // the object stays open for "tasks", "groups" and "joins"
        file.bytes.append(contentsOf: ",\"tasks\":[\n".utf8)
        for progress in fanOutProgress.values { writeHeldRows(progress) }
        var groupIndices: [Int] = []
        var joins: [UInt8] = []
        var firstTask = true
        for index in nodes.indices {
            switch nodes[index].kind {
            case .task:
                if !firstTask { file.bytes.append(contentsOf: ",\n".utf8) }
                firstTask = false
                file.bytes += shown(json: taskObject(index))
                file.flushIfFull()
            case .group:
                groupIndices.append(index)
            case .join:
                if !joins.isEmpty { joins.append(contentsOf: ",\n".utf8) }
                var object = commonFields(index)
                object.add("members", nodes[index].members.map { nodes[$0].name })
                object.add("required", nodes[index].required)
                object.add("succeeded", nodes[index].members.filter { nodes[$0].status == .succeeded }.count)
                object.add("timed_out", nodes[index].joinTimedOut)
                joins += object.finish()
            }
        }
        // Fan-out members' rows, written as they settled (in that order).
        if summaryRows.byteCount > 0 {
            if !firstTask { file.bytes.append(contentsOf: ",\n".utf8) }
            summaryRows.drain(in: record) { chunk in
                file.bytes += chunk
                file.flushIfFull()
            }
        }
        file.bytes.append(contentsOf: "\n],\"groups\":[".utf8)
        for (position, index) in groupIndices.enumerated() {
            if position > 0 { file.bytes.append(contentsOf: ",\n".utf8) }
            writeGroup(index, into: &file)
        }
        file.bytes.append(contentsOf: "],\"joins\":[".utf8)
        file.bytes += joins
        file.bytes.append(contentsOf: "]}\n".utf8)
    }

    /// A group's object. A fan-out's member names and items (a million
    /// each, maybe) go from their spills to the file a chunk at a time.
    private func writeGroup(_ index: Int, into file: inout ChunkedFileWriter) {
        var object = commonFields(index)
        object.add("timed_out", nodes[index].groupTimedOut)
        guard let progress = fanOutProgress[index] else {
            object.add("members", nodes[index].members.map { nodes[$0].name })
            file.bytes += object.finish()
            return
        }
        // Members with no row in "tasks" succeeded plainly (see docs/RUNNING.md).
        object.add("rows_left_out", progress.rowsLeftOut)
        if progress.leftOutRestored > 0 { object.add("left_out_restored", progress.leftOutRestored) }
        if progress.leftOutUpToDate > 0 { object.add("left_out_up_to_date", progress.leftOutUpToDate) }
        if let template = fanOuts[index]?.template.value.name, let identity = identities[template] {
            object.add("member_identity", identity.hash)
            let partsJSON = Self.partsJSON(identity)
            object.add("member_identity_parts") { $0 += partsJSON }
        }
        var head = object.finish()
        head.removeLast()  // the object stays open for the lists
        file.bytes += head
        file.bytes.append(contentsOf: ",\"members\":[".utf8)
        progress.names.drain(in: record) { chunk in
            file.bytes += chunk
            file.flushIfFull()
            if watchState != nil { watchKeepsLists(of: index, names: chunk, items: nil) }  // for the next runs that keep it
        }
        file.bytes.append(contentsOf: "],\"items\":[".utf8)
        progress.items.drain(in: record) { chunk in
            file.bytes += chunk
            file.flushIfFull()
            if watchState != nil { watchKeepsLists(of: index, names: nil, items: chunk) }
        }
        file.bytes.append(contentsOf: "]}".utf8)
    }

    func taskObject(_ index: Int) -> [UInt8] {
        var object = commonFields(index)
        object.add("phase", nodes[index].isFinally ? "finally" : "main")
        object.add("group", nodes[index].group.map { nodes[$0].name })
        object.add("item", nodes[index].item?.text)
        object.add("attempts", nodes[index].attempt)
        object.add("exit_code", nodes[index].stash.exitCode)
        object.add("duration", nodes[index].stash.duration)
        object.add("peak_memory_bytes", nodes[index].stash.usage?.peakMemoryBytes.map(Int.init))
        object.add("cpu_seconds", nodes[index].stash.usage?.cpuSeconds)
        if nodes[index].hasLog { object.add("log", record.logPath(index: index, name: nodes[index].name)) }
        // Its files' name in the record (logs/NAME.log, outputs/NAME.N), for readers of the record (`RecordedRun`).
        object.add("record_name", record.recordName(index: index, name: nodes[index].name))
        object.add("stdout", nodes[index].stash.stdout)
        var outputs = JSONObjectWriter()
        for output in nodes[index].stash.outputs { outputs.add(key: output.key, output.value) }
        let outputsJSON = outputs.finish()
        object.add("outputs") { $0 += outputsJSON }
        object.add("reused", nodes[index].reused?.rawValue)
        if let identity = identity(of: index) {
            object.add("identity", identity.hash)
            let partsJSON = Self.partsJSON(identity)
            object.add("identity_parts") { $0 += partsJSON }
        }
        return object.finish()
    }

    /// `{"run": "1a2b3c4d", …}`: each part's hash, 8 hex digits (a plan's
    /// parts have 8 already; only a member's written ones are cut).
    private static func partsJSON(_ identity: TaskIdentity) -> [UInt8] {
        var parts = JSONObjectWriter()
        for part in identity.parts { parts.add(key: part.name, part.hash.utf8.count <= 8 ? part.hash : String(part.hash.prefix(8))) }
        return parts.finish()
    }

    /// An object with the fields every node has. Each object is built on
    /// its own and appended: a writer that took over the file's buffer was
    /// found copying all of it at every append (a non-unique reference).
    private func commonFields(_ index: Int) -> JSONObjectWriter {
        var object = JSONObjectWriter()
        object.add("name", nodes[index].name)
        object.add("status", nodes[index].status.rawValue)
        object.add("reason", nodes[index].cancelReason?.rawValue)
        object.add("started", nodes[index].startedAt)
        object.add("finished", nodes[index].finishedAt)
        return object
    }
}

#if canImport(Glibc)
import Glibc
#endif

extension RunEngine {
    /// flowrun's working directory, for `resume` to run where the run ran.
    static func currentDirectory() -> String? {
        guard let path = getcwd(nil, 0) else { return nil }
        defer { free(path) }
        return String(cString: path)
    }

    /// `file` made absolute (resolving links), for `resume` to find it from anywhere.
    static func absolutePath(_ file: String) -> String {
        guard let resolved = realpath(file, nil) else { return file }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

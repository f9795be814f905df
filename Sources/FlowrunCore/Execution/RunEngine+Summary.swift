/// `summary.json`: the final state of every task, group and join.
extension RunEngine {
    /// Writes the summary as it goes, one task at a time.
    func writeSummary(_ write: (String) -> Void) {
        var json = JSONObjectWriter()
        json.add("run_id", record.runID)
        json.add("workflow", plan.workflow.name)
        json.add("file", plan.workflow.file)
        json.add("exit_code", Int(exitCode()))
        json.add("duration", elapsed)
        json.add("stopped_by", stopping?.rawValue)
        var counts = JSONObjectWriter()
        for (status, count) in statusCounts() { counts.add(status.rawValue, count) }
        json.addRaw("counts", counts.result)
        var groups: [String] = []
        var joins: [String] = []
        write(String(json.result.dropLast()) + ",\"tasks\":[\n")
        var firstTask = true
        for index in nodes.indices {
            let node = nodes[index]
            var object = JSONObjectWriter()
            object.add("name", node.name)
            object.add("status", node.status.rawValue)
            object.add("reason", node.cancelReason?.rawValue)
            object.add("started", node.startedAt)
            object.add("finished", node.finishedAt)
            switch node.kind {
            case .task:
                object.add("phase", node.isFinally ? "finally" : "main")
                object.add("group", node.group.map { nodes[$0].name })
                object.add("item", node.item)
                object.add("attempts", node.attempt)
                object.add("exit_code", node.stash.exitCode)
                object.add("duration", node.stash.duration)
                if node.hasLog { object.add("log", record.logPath(for: node.name)) }
                object.add("stdout", node.stash.stdout)
                var outputs = JSONObjectWriter()
                for output in node.stash.outputs { outputs.add(output.key, output.value) }
                object.addRaw("outputs", outputs.result)
                write((firstTask ? "" : ",\n") + object.result)
                firstTask = false
            case .group:
                object.add("members", node.members.map { nodes[$0].name })
                object.add("timed_out", node.groupTimedOut)
                groups.append(object.result)
            case .join:
                object.add("members", node.members.map { nodes[$0].name })
                object.add("required", node.required)
                object.add("succeeded", node.members.filter { nodes[$0].status == .succeeded }.count)
                object.add("timed_out", node.joinTimedOut)
                joins.append(object.result)
            }
        }
        write("\n],\"groups\":[" + groups.joined(separator: ",\n") + "],\"joins\":[" + joins.joined(separator: ",\n") + "]}\n")
    }
}

package import FlowrunModel
package import FlowrunValues
import FlowrunPlanning

/// Settling a ready task without running it: restored from the run being
/// resumed, or up to date with its last successful run (`sources:`).
extension RunEngine {
    /// True when task `index` was settled `succeeded` without running (or
    /// failed because its globs could not be filled in).
    func settlesWithoutRunning(_ index: Int) -> Bool {
        let name = nodes[index].name
        // A service is started again, never restored nor up to date: its dependents need it running.
        if isService(index) { return false }
        if !nodes[index].isFinally, let restored = reuse.restored[name], restored.item == nodes[index].item?.text {
            nodes[index].stash.stdout = restored.stdout
            nodes[index].stash.exitCode = restored.exitCode
            nodes[index].stash.outputs = restored.outputs
            nodes[index].stash.duration = restored.duration
            // Whole from the old record, as a `foreach` over it needs (the summary kept only its end).
            if let whole = restored.wholeStdout, whole.byteCount > restored.stdout.utf8.count {
                nodes[index].stash.oversizedStdout = Shared(OversizedStdout(byteCount: whole.byteCount, file: whole.file))
            }
            nodes[index].reused = .restored
            settle(index, .succeeded)
            return true
        }
        guard let store = reuse.store, let task = nodes[index].definition, !task.value.sources.isEmpty else { return false }
        let upToDate: UpToDate
        if let decided = store.takeDecision(task: name) {
            // Decided before the supervisor split, which a run that starts no task skips.
            upToDate = decided
        } else {
            // The last successful run first: its stamps spare reading unchanged files.
            let record = store.read(task: name)
            let check: IncrementalCheck
            do throws(TemplateRenderError) {
                check = try incrementalCheck(index, task.value, recorded: record, hashes: store.hashes)
            } catch {
                settle(index, .failed, why: error.description)
                return true
            }
            guard let record, let generated = check.generatedFiles(upToDateWith: record, hashes: store.hashes) else {
                if Supervisor.skippedAsNoOp {
                    // The check before the split found every task up to date and kept no decision
                    // for this one: started now, it would run with no supervisor to stop it should
                    // flowrun be killed (`kill -9` would leave it running). Refused: the next run splits.
                    settle(index, .failed, why: "not started: the check before the run found every task up to date, but not this one as it was about to start (a bug in flowrun: please report it); run again")
                    return true
                }
                nodes[index].incremental = Shared(check)
                return false
            }
            upToDate = UpToDate(record: record, check: check, generated: generated)
        }
        if let refreshed = upToDate.refreshed { store.write(refreshed, task: name) }
        // The member the check made it for (by name): the same item, so the same identity.
        if let (item, identity) = upToDate.memberIdentity, item == nodes[index].item?.text { checkedMemberIdentities[index] = identity }
        nodes[index].stash.stdout = upToDate.stdout
        nodes[index].stash.exitCode = upToDate.exitCode
        nodes[index].stash.outputs = upToDate.outputs.map { ($0.key, $0.value) }
        nodes[index].reused = .upToDate
        settle(index, .succeeded)
        return true
    }

    /// The task's identity from the plan (a member's with its item).
    func identity(of index: Int) -> TaskIdentity? {
        guard let definition = nodes[index].definition, let identity = identities[definition.value.name] else { return nil }
        guard nodes[index].group != nil && nodes[index].item != nil else { return identity }
        if let checked = checkedMemberIdentities[index] { return checked }
        let template = definition.value.name
        let fanOut = fanOutIdentities[template] ?? FanOutIdentity(template: identity)
        fanOutIdentities[template] = fanOut
        return fanOut.member(item: nodes[index].item?.text)
    }

    /// Fills in what the task will run and its globs, and hashes its sources.
    private func incrementalCheck(
        _ index: Int, _ task: TaskDefinition, recorded: IncrementalRecord?, hashes: ContentHashCache
    ) throws(TemplateRenderError) -> IncrementalCheck {
        try IncrementalCheck.make(
            task: task, identity: identity(of: index)?.hash ?? "", workflowEnvironment: plan.workflow.env,
            recorded: recorded, hashes: hashes,
            renderShell: { (template: Template) throws(TemplateRenderError) -> String in try renderShell(template, for: index) },
            renderText: { (template: Template) throws(TemplateRenderError) -> String in try renderText(template, for: index) })
    }

    /// Path and content hash of everything the patterns match, in order;
    /// nil when something cannot be read, or (`requireMatches`) a pattern
    /// matches nothing — a generated file that is missing. Through `hashes`
    /// (this run's, and `recorded`'s stamps): an unchanged file is not read.
    package static func hashes(
        of patterns: [GlobPattern], base: String, requireMatches: Bool = true,
        recorded: [IncrementalRecord.PathHash] = [], hashes: ContentHashCache
    ) -> [IncrementalRecord.PathHash]? {
        var result: [IncrementalRecord.PathHash] = []
        result.reserveCapacity(recorded.count)
        // The recorded entry for each path: the state lists them in the order the
        // patterns matched them last time, so the two lists are walked in step, and
        // a table by path is made only if they part (a file added, removed, renamed).
        var next = 0
        var known: [String: IncrementalRecord.PathHash]?
        func recordedEntry(_ path: String) -> IncrementalRecord.PathHash? {
            if known == nil, next < recorded.count, recorded[next].path == path {
                next += 1
                return recorded[next - 1]
            }
            if known == nil {
                var table: [String: IncrementalRecord.PathHash] = [:]
                for item in recorded where item.stamp != nil { table[item.path] = item }
                known = table
            }
            return known?[path]
        }
        for pattern in patterns {
            // A file named outright is looked up by its path; a glob another task listed
            // gives its hashes whole, as `hash` would give each again.
            let isWalked = pattern.segments.contains { if case .literal = $0 { false } else { true } }
            if isWalked, let walked = hashes.hashes(matching: pattern, base: base) {
                if walked.isEmpty && requireMatches { return nil }
                result.append(contentsOf: walked)
                next += walked.count  // in step again if the state lists them too
                continue
            }
            let paths = hashes.paths(matching: pattern, base: base)
            if paths.isEmpty && requireMatches { return nil }
            let first = result.count
            for path in paths {
                let full = path.hasPrefix("/") || base.isEmpty ? path : base + "/" + path
                guard let (hash, stamp) = hashes.hash(full, recorded: recordedEntry(path)) else { return nil }
                result.append(IncrementalRecord.PathHash(path: path, hash: hash, stamp: stamp))
            }
            if isWalked { hashes.keep(Array(result[first...]), matching: pattern, base: base) }
        }
        return result
    }

    /// After success: the sources as they were before the task ran, what it
    /// generated now, and its stash, into `.flowrun/state`.
    func recordIncrementalSuccess(_ index: Int) {
        guard let store = reuse.store, let check = nodes[index].incremental?.value else { return }
        nodes[index].incremental = nil
        // A source it could not read: no state, so it runs every time until it can be read.
        guard !check.sourcesUnreadable else { return }
        // The state keeps a stash whole or not at all: a stdout past 1 MiB
        // (kept whole only in this run's record) makes the task run every time.
        guard nodes[index].stash.oversizedStdout == nil else { return }
        // Generated files that are missing: recorded as none, so the next run runs it again.
        let generated = Self.hashes(of: check.generates, base: check.base, hashes: store.hashes) ?? [IncrementalRecord.PathHash(path: "", hash: "missing")]
        let mask: (String) -> String = { [secretMasker] in secretMasker?.mask($0) ?? $0 }
        let stdout = mask(nodes[index].stash.stdout)
        let outputs = nodes[index].stash.outputs.map { IncrementalRecord.KeyValue(key: $0.key, value: mask($0.value)) }
        // A stash that holds a secret is kept masked (the state never stores one) and so is not
        // the stash: settled up to date from it, a `foreach` over its stdout would hand `***` to a
        // member as its item, and an expression would read `***`. Not kept: the task runs every time,
        // as one whose stdout passes 1 MiB does.
        guard stdout == nodes[index].stash.stdout,
              zip(outputs, nodes[index].stash.outputs).allSatisfy({ $0.value == $1.value }) else { return }
        let record = IncrementalRecord(
            identity: check.identity, sources: check.sources, generates: generated,
            stdout: stdout, exitCode: nodes[index].stash.exitCode, outputs: outputs)
        store.write(record, task: nodes[index].name)
    }
}

/// An incremental task's inputs, worked out when it became ready.
package struct IncrementalCheck: Sendable {
    /// Its identity with everything filled in (script, env, cwd, globs).
    var identity: String
    /// The folder its globs are relative to ("" for flowrun's).
    var base: String
    /// Each source's path and content hash before it ran.
    var sources: [IncrementalRecord.PathHash]
    var generates: [GlobPattern]
}

extension IncrementalCheck {
    /// Fills in the task's script, environment, `cwd` and globs with
    /// `renderShell`/`renderText` (the engine's values, or a dry run's
    /// static ones), hashes them with the task's identity, and hashes the
    /// sources as they are now.
    package static func make(
        task: TaskDefinition, identity: String, workflowEnvironment: [EnvironmentEntry],
        recorded: IncrementalRecord?, hashes: ContentHashCache,
        renderShell: (Template) throws(TemplateRenderError) -> String,
        renderText: (Template) throws(TemplateRenderError) -> String
    ) throws(TemplateRenderError) -> IncrementalCheck {
        var sha = SHA256()
        sha.field(identity)
        switch task.action {
        case .run(let script): sha.field(try renderShell(script))
        case .sleep, .http: break  // their identity holds them as written
        }
        for entry in workflowEnvironment + task.env {
            sha.field(entry.name)
            sha.field(try renderText(entry.value))
        }
        let base = try task.cwd.map { (cwd: Template) throws(TemplateRenderError) -> String in try renderText(cwd) } ?? ""
        sha.field(base)
        var sources: [GlobPattern] = []
        var generates: [GlobPattern] = []
        for (templates, isSource) in [(task.sources, true), (task.generates, false)] {
            sha.field(isSource ? "sources" : "generates")
            for template in templates {
                let text = try renderText(template)
                sha.field(text)
                do throws(GlobPattern.Problem) {
                    let pattern = try GlobPattern.parse(text)
                    if isSource { sources.append(pattern) } else { generates.append(pattern) }
                } catch {
                    throw TemplateRenderError(location: template.location, message: "bad glob '\(text)': \(error.message)")
                }
            }
        }
        // Every source that matches, hashed; one that cannot be read makes the task run.
        let sourceHashes = RunEngine.hashes(of: sources, base: base, requireMatches: false, recorded: recorded?.sources ?? [], hashes: hashes)
            ?? [IncrementalRecord.PathHash.unreadable]
        return IncrementalCheck(identity: sha.finalize(), base: base, sources: sourceHashes, generates: generates)
    }

    /// Whether a source matched and could not be read (hashed as `PathHash.unreadable`).
    var sourcesUnreadable: Bool { sources.contains(.unreadable) }

    /// Whether `record` (the last successful run) still holds: same identity,
    /// same sources, and the generated files as it left them.
    package func isUpToDate(with record: IncrementalRecord, hashes: ContentHashCache) -> Bool {
        generatedFiles(upToDateWith: record, hashes: hashes) != nil
    }

    /// The generated files' hashes when `record` still holds, else nil.
    func generatedFiles(upToDateWith record: IncrementalRecord, hashes: ContentHashCache) -> [IncrementalRecord.PathHash]? {
        // A source that cannot be read says nothing of what the others hold: the task runs
        // (the mark matched the one its last run recorded, so edits to every other source went unseen).
        guard !sourcesUnreadable, !record.sources.contains(.unreadable),
              record.identity == identity, record.sources == sources,
              let generated = RunEngine.hashes(of: generates, base: base, recorded: record.generates, hashes: hashes),
              generated == record.generates else { return nil }
        return generated
    }
}

import Dispatch
import FlowrunModel
import FlowrunValues
import FlowrunEvents

/// `flowrun watch` over fan-outs and joins (SPEC §14): a fan-out's watch
/// roots come from its member template's `sources:`, filled in per item
/// where the items are known before the run (a list, a range, a matrix),
/// else the globs' literal folder before their first `${{` (over-watching
/// is fine: the incremental rule decides which members run). A change runs
/// the group again, every member decided again; a running member whose
/// own sources changed is cancelled and started again by the next run.
extension RunEngine {
    /// Items filled in one by one when the watch starts, at most: past this a
    /// fan-out is watched by its globs' literal folders (bounded memory).
    static let watchedItemsAtMost = 10_000

    /// On the queue, before the first run: each fan-out's sources, by group.
    func watchFanOuts(_ watch: WatchState, roots: inout [(folder: String, recursive: Bool)]) {
        dispatchPrecondition(condition: .onQueue(queue))
        for group in fanOuts.keys where !nodes[group].isFinally {
            guard let fanOut = fanOuts[group] else { continue }
            let template = fanOut.template.value
            // A member's own needs outside the group: a change to one runs the group again.
            for need in template.needs.map(\.value) where need != nodes[group].name {
                if let index = indexByName[need] { watch.fanOutsNeeding[index, default: []].append(group) }
            }
            guard !template.sources.isEmpty else { continue }
            if let entries = itemGlobs(group, fanOut) {
                for entry in entries.sources {
                    watch.sources.append((group, entry.pattern, entry.base))
                    let root = entry.pattern.watchRoot
                    roots.append((Self.joinedPath(entry.base, root.folder), root.recursive))
                }
                watch.generates += entries.generates
                continue
            }
            // Items only the run knows: everything under the literal text before the first `${{`.
            let cwdIsLiteral = template.cwd.map { !Self.hasExpression($0) } ?? true
            let base = template.cwd.map(Self.literalPrefix) ?? ""
            for source in template.sources {
                if cwdIsLiteral, !Self.hasExpression(source), let pattern = try? GlobPattern.parse(source.source) {
                    watch.sources.append((group, pattern, base))
                    let root = pattern.watchRoot
                    roots.append((Self.joinedPath(base, root.folder), root.recursive))
                    continue
                }
                // A `cwd:` filled in per item: everything under its literal part.
                let prefix = cwdIsLiteral ? Self.joinedPath(base, Self.literalPrefix(source)) : base
                watch.prefixes.append((group, prefix, Self.literalTail(source)))
                let folder = prefix.lastIndex(of: "/").map { String(prefix[..<$0]) } ?? ""
                roots.append((prefix.hasPrefix("/") && folder.isEmpty ? "/" : folder, true))
            }
            guard cwdIsLiteral else { continue }
            for generated in template.generates {
                if !Self.hasExpression(generated) {
                    if let pattern = try? GlobPattern.parse(generated.source) { watch.generates.append((pattern, base)) }
                    continue
                }
                let parts = Self.literalEnds(generated)
                // Never one that would match every path: that would silence the watch.
                if !parts.prefix.isEmpty || !parts.suffix.isEmpty {
                    watch.templatedGenerates.append((Self.joinedPath(base, parts.prefix), parts.suffix))
                }
            }
        }
    }

    /// Every member's `sources:` and `generates:` filled in with its item,
    /// or nil when the items are known only at run time, are too many, or the
    /// globs read what only the run knows (another task's value).
    private func itemGlobs(_ group: Int, _ fanOut: FanOut) -> (sources: [(pattern: GlobPattern, base: String)], generates: [(pattern: GlobPattern, base: String)])? {
        let template = fanOut.template.value
        guard let count = fanOut.source.staticCount, count <= Self.watchedItemsAtMost else { return nil }
        let templates = template.sources + template.generates + (template.cwd.map { [$0] } ?? [])
        guard !templates.contains(where: { $0.operands.contains { $0.path.referencedName != nil } }) else { return nil }
        guard case .success(var feed) = fanOutFeed(fanOut.source, split: fanOut.split, group: group) else { return nil }
        var sources: [(pattern: GlobPattern, base: String)] = []
        var generates: [(pattern: GlobPattern, base: String)] = []
        var seen = Set<String>()
        while let item = feed.next() {
            let offset = feed.offset - 1
            if let selected = fanOut.items, !selected.contains(offset) { continue }
            guard let base = (template.cwd.map { try? renderText($0, for: group, item: item, index: offset) }) ?? "" else { return nil }
            for source in template.sources {
                guard let text = try? renderText(source, for: group, item: item, index: offset), let pattern = try? GlobPattern.parse(text) else { return nil }
                // Members often share a glob (`src/*.h`): once is enough.
                if seen.insert(base + "\u{0}" + text).inserted { sources.append((pattern, base)) }
            }
            for generated in template.generates {
                if let text = try? renderText(generated, for: group, item: item, index: offset), let pattern = try? GlobPattern.parse(text) {
                    generates.append((pattern, base))
                }
            }
        }
        return sources.isEmpty ? nil : (sources, generates)
    }

    /// The running members of a fan-out whose own sources (filled in with
    /// their item) match one of `paths`: the ones a change during the run stops.
    func membersWhoseSourcesChanged(_ group: Int, _ paths: [String]) -> [Int] {
        guard let template = fanOuts[group]?.template.value else { return [] }
        var matched: [Int] = []
        for member in members(of: group) where nodes.contains(member) && nodes[member].index != nil {
            guard nodes[member].status == .running || nodes[member].status == .waiting else { continue }
            let base = template.cwd.flatMap { try? renderText($0, for: member) } ?? ""
            let globs = template.sources.compactMap { (try? renderText($0, for: member)).flatMap { try? GlobPattern.parse($0) } }
            if paths.contains(where: { path in globs.contains { Self.watchMatches($0, base, path) } }) { matched.append(member) }
        }
        return matched
    }

    /// Between runs: fan-outs the next run runs again start afresh; the
    /// others keep their members' ends from the run before (counted, listed).
    func prepareFanOutsForNextRun(_ watch: WatchState, again: Set<Int>) {
        dispatchPrecondition(condition: .onQueue(queue))
        settledMemberCounts = [:]
        settledMemberFailed = false
        for group in fanOuts.keys {
            if again.contains(group) {
                resetFanOutForNextRun(group)
                watch.keptFanOuts[group] = nil
            } else if let kept = watch.keptFanOuts[group], let progress = fanOutProgress[group] {
                for (status, count) in kept.counts { settledMemberCounts[status, default: 0] += count }
                if kept.failed { settledMemberFailed = true }
                progress.names.append(kept.names, in: record)
                progress.items.append(kept.items, in: record)
                (kept.names, kept.items) = ([], [])  // written back when this run's summary lists them
                // Their rows were in the run that ran them: here they are left out, kept from it.
                progress.rowsLeftOut = kept.members
                progress.leftOutRestored = kept.counts[.succeeded] ?? 0
                progress.leftOutUpToDate = 0
            }
        }
    }

    /// A fan-out member has settled: counted for the runs that keep it.
    func watchCountsMember(_ index: Int, group: Int) {
        guard let watch = watchState else { return }
        dispatchPrecondition(condition: .onQueue(queue))
        let kept = watch.keptFanOuts[group] ?? KeptFanOut()
        watch.keptFanOuts[group] = kept
        kept.counts[nodes[index].status, default: 0] += 1
        if nodes[index].status.isFailure && !(nodes[index].definition?.value.continueOnError ?? false) { kept.failed = true }
    }

    /// The summary's lists of a fan-out, as written: kept for the runs that do not run it again.
    func watchKeepsLists(of group: Int, names: ArraySlice<UInt8>?, items: ArraySlice<UInt8>?) {
        guard let watch = watchState else { return }
        dispatchPrecondition(condition: .onQueue(queue))
        let kept = watch.keptFanOuts[group] ?? KeptFanOut()
        watch.keptFanOuts[group] = kept
        if let names { kept.names += names }
        if let items { kept.items += items }
    }

    static func hasExpression(_ template: Template) -> Bool {
        template.segments.contains { if case .expression = $0 { return true } else { return false } }
    }

    /// The text of `template` before its first `${{`.
    static func literalPrefix(_ template: Template) -> String {
        var prefix = ""
        for segment in template.segments {
            guard case .text(let text) = segment else { break }
            prefix += text
        }
        return prefix
    }

    /// The text before the first `${{` and after the last `}}`.
    static func literalEnds(_ template: Template) -> (prefix: String, suffix: String) {
        var suffix = ""
        for segment in template.segments.reversed() {
            guard case .text(let text) = segment else { break }
            suffix = text + suffix
        }
        return (literalPrefix(template), suffix)
    }

    /// The text every path a glob filled in at run time can match ends with:
    /// its literal text after the last `}}`, from after its last wildcard
    /// (`.c` for `${{ item }}.c` and for `${{ item }}/*.c`; "" for `${{ item }}/**`).
    static func literalTail(_ template: Template) -> String {
        let suffix = literalEnds(template).suffix
        guard let last = suffix.lastIndex(where: { "*?[]\\".contains($0) }) else { return suffix }
        return String(suffix[suffix.index(after: last)...])
    }

    /// Whether `path`, or a folder it is in (a source may be a folder,
    /// changed by what is added to it), ends with `tail`. A change elsewhere
    /// cannot be a source's: a report a dependent writes (`report.txt` beside
    /// `${{ item }}.c`) would otherwise run the fan-out, the dependent, and so
    /// on without end.
    static func endsWithTail(_ path: String, _ tail: String) -> Bool {
        guard !tail.isEmpty else { return true }
        var rest = Substring(path)
        while true {
            if rest.hasSuffix(tail) { return true }
            guard let slash = rest.lastIndex(of: "/") else { return false }
            rest = rest[..<slash]
        }
    }

    /// `folder` under a task's `cwd:` (`base`), as the watch spells paths.
    static func joinedPath(_ base: String, _ folder: String) -> String {
        if folder.hasPrefix("/") || base.isEmpty { return folder }
        return folder.isEmpty ? base : base + "/" + folder
    }

    /// Whether `path` (as the watch spells it) matches `pattern` under `base`.
    static func watchMatches(_ pattern: GlobPattern, _ base: String, _ path: String) -> Bool {
        if pattern.isAbsolute { return pattern.matches(path: path) }
        guard !base.isEmpty else { return pattern.matches(path: path) }
        guard path.hasPrefix(base + "/") else { return false }
        return pattern.matches(path: String(path.dropFirst(base.count + 1)))
    }
}

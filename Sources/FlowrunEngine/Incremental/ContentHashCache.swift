import Synchronization
#if canImport(Glibc)
import Glibc
#endif
package import FlowrunModel

/// The content hashes one run has taken, by path, each with the stamp the
/// file had (`FileStamp`): a header that seventy tasks list as a source is
/// read once per run, and a file whose stamp is as `.flowrun/state`
/// recorded it is not read at all. Content stays the truth: a stamp that
/// differs, or one not settled when it was read, means reading again.
///
/// Shared by the engine's checks and the generated files' hashes after a
/// task; the table is behind a `Mutex`, the reads outside it.
package final class ContentHashCache: Sendable {
    private let entries = Mutex<[ExactPath: Entry]>([:])
    /// The clock a read's start is taken from (the kernel's coarse wall clock; a test's own).
    private let now: @Sendable () -> Int64
    private let reads = Atomic(0)
    /// Whether a task of this run has started: until then nothing of the
    /// run can have written a file, and a hash this run took stands without
    /// a new `stat` (a no-op run of 70 tasks sharing 90 headers made 6,300).
    private let tasksStarted = Atomic(false)
    /// What each glob (its text, its base folder) matched, taken while no
    /// task had started: 70 tasks listing `include/**/*.h` walk it once.
    private let expansions = Mutex<[ExactPath: Expansion]>([:])

    private struct Expansion {
        var paths: [String]
        /// Each path's hash and stamp, once every one was settled: the next
        /// task listing the glob takes the list whole (90 headers looked up
        /// one by one, 70 times, were a twentieth of a no-op run).
        var hashes: [IncrementalRecord.PathHash]?
    }
    /// A path a pattern without wildcards named, as `stat` found it while
    /// no task had started, and the clock before that `stat`: its hash
    /// takes the stamp from here instead of a second `stat` (a compile
    /// task's source and object were six `stat`s, now two).
    private let statted = Mutex<[ExactPath: (stamp: FileStamp, readStart: Int64)]>([:])

    /// The run of this process the cache serves (`flowrun watch` runs many):
    /// a hash stands without a `stat` only in the run that took it.
    private let run = Atomic(0)

    private struct Entry {
        var stamp: FileStamp
        var hash: String
        /// The run whose `stat` found `stamp`.
        var run: Int
    }

    package init(now: @escaping @Sendable () -> Int64 = FileStamp.coarseNow) {
        self.now = now
    }

    /// Called by the engine before it starts any task's attempt: from then
    /// on a task (or what it left running) may write any file, and every
    /// look stats it again (and every glob is walked again). A file someone else edits while the run checks
    /// is taken as it was a moment before, as if the check had come first.
    package func taskStarting() {
        tasksStarted.store(true, ordering: .releasing)
    }

    /// Called by `flowrun watch` before each later run: what the run before
    /// found stands no more without a new look (a source edited between two
    /// runs that started no task was taken as unchanged). A stamp found
    /// before still spares reading a file whose `stat` is as it was.
    package func runStarting() {
        run.add(1, ordering: .acquiringAndReleasing)
        expansions.withLock { $0.removeAll() }
        statted.withLock { $0.removeAll() }
    }

    /// The paths `pattern` matches under `base`: walked again once a task
    /// has started (it may add or remove files), else walked once a run.
    package func paths(matching pattern: GlobPattern, base: String) -> [String] {
        guard !tasksStarted.load(ordering: .acquiring) else { return GlobExpansion.expand(pattern, base: base) }
        if let literal = GlobExpansion.literalPath(pattern, base: base) {
            // Matched (and hashed) already this run: it stands, as a walked glob does.
            let current = run.load(ordering: .acquiring)
            if entries.withLock({ $0[ExactPath(text: literal.full)]?.run == current }) || statted.withLock({ $0[ExactPath(text: literal.full)] != nil }) { return [literal.shown] }
            let readStart = now()
            var info = stat()
            guard stat(literal.full, &info) == 0 else { return [] }
            // Under the name `hash` is given (`RunEngine.hashes`: base + "/" + path).
            statted.withLock { $0[ExactPath(text: literal.full)] = (FileStamp(info), readStart) }
            return [literal.shown]
        }
        let key = ExactPath(text: base + "\u{0}" + pattern.text)
        if let known = expansions.withLock({ $0[key]?.paths }) { return known }
        let paths = GlobExpansion.expand(pattern, base: base)
        expansions.withLock { $0[key] = Expansion(paths: paths) }
        return paths
    }

    /// The hashes of what a walked glob matched (`keep(_:matching:base:)`),
    /// while no task has started: what `hash` would give for each path again.
    package func hashes(matching pattern: GlobPattern, base: String) -> [IncrementalRecord.PathHash]? {
        guard !tasksStarted.load(ordering: .acquiring) else { return nil }
        return expansions.withLock { $0[ExactPath(text: base + "\u{0}" + pattern.text)]?.hashes }
    }

    /// Keeps the hashes of a walked glob's matches, in its order, if each
    /// stamp was settled (an unsettled file is read again by the next look).
    package func keep(_ hashes: [IncrementalRecord.PathHash], matching pattern: GlobPattern, base: String) {
        guard !tasksStarted.load(ordering: .acquiring), hashes.allSatisfy({ $0.stamp != nil }) else { return }
        expansions.withLock { expansions in
            let key = ExactPath(text: base + "\u{0}" + pattern.text)
            // Only a walked glob has an expansion; and only one of the paths it matched.
            guard expansions[key]?.paths.elementsEqual(hashes.lazy.map(\.path)) == true else { return }
            expansions[key]?.hashes = hashes
        }
    }

    /// How many times a file's content was read (and hashed) through this cache.
    package var contentReads: Int { reads.load(ordering: .relaxed) }

    /// What `path` holds, hashed, and the stamp that may find it again (nil
    /// when it was not settled). `recorded` is what the state holds for it.
    /// Nil when the path cannot be read.
    package func hash(_ path: String, recorded: IncrementalRecord.PathHash? = nil) -> (hash: String, stamp: FileStamp?)? {
        // Before the stat: a write after this moment gets a later ctime.
        let current = run.load(ordering: .acquiring)
        if !tasksStarted.load(ordering: .acquiring), let known = entries.withLock({ $0[ExactPath(text: path)] }), known.run == current { return (known.hash, known.stamp) }
        // The stat the pattern's match took, if no task has started since.
        let seen = tasksStarted.load(ordering: .acquiring) ? nil : statted.withLock { $0.removeValue(forKey: ExactPath(text: path)) }
        let readStart = seen?.readStart ?? now()
        guard let stamp = seen?.stamp ?? FileStamp.of(path) else { return nil }
        // A recorded stamp was settled when it was recorded (only those are kept).
        if let recorded, recorded.stamp == stamp {
            entries.withLock { $0[ExactPath(text: path)] = Entry(stamp: stamp, hash: recorded.hash, run: current) }
            return (recorded.hash, stamp)
        }
        if let known = entries.withLock({ $0[ExactPath(text: path)] }), known.stamp == stamp {
            entries.withLock { $0[ExactPath(text: path)]?.run = current }
            return (known.hash, stamp)
        }
        reads.add(1, ordering: .relaxed)
        guard let hash = ContentHash.of(path) else { return nil }
        guard stamp.isSettled(readStart: readStart) else { return (hash, nil) }
        entries.withLock { $0[ExactPath(text: path)] = Entry(stamp: stamp, hash: hash, run: current) }
        return (hash, stamp)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import FlowrunValues

/// Old run records go at the start of each run (RUNNING.md, "Day two"):
/// the `keep` newest records in the folder stay, this run's included; an
/// older one is removed unless
///
/// - a flowrun process still holds it (its `flock`): a live run, or
/// - it has no `summary.json` and changed in the last minute: a run that
///   is starting right now, made but not locked yet, or
/// - it is not the user's own.
///
/// Only the user's own records count toward `keep`: folders another user
/// planted in a shared `--log-dir` (future-dated ids, say) neither push
/// the user's records out nor are touched.
///
/// Only folders named like run ids are touched, and nothing is followed
/// through a link: a link a task left in its `outputs/` is removed, not
/// what it points at.
package enum RecordPruning {
    package static let defaultKeep = 50
    /// The one record folder a pruning empties and keeps instead of
    /// removing it, for the next run to rename into place
    /// (`RunFolder.takeSpare`): in a steady state of `keep` records, a run
    /// makes no folder and removes none.
    package static let spareName = ".flowrun-spare"
    /// How long a record without a summary may be a run still starting up.
    static let startupGrace: time_t = 60

    /// Removes the records in `base` (a held folder, shown as `shownAs`)
    /// beyond the `keep` newest, `current` counted among them. Returns
    /// what could not be removed, and why.
    static func prune(base: Int32, shownAs: String, keep: Int, current: String) -> [String] {
        let older = RunHistory.unorderedRunIDs(in: base, ownedBy: geteuid()).filter { $0 != current }
        let removable = RunHistory.oldest(older.count - max(0, keep - 1), of: older, in: base)
        var problems: [String] = []
        var keepsSpare = true
        for id in removable {
            if let problem = remove(id, in: base, shownAs: shownAs + "/" + id, keepingSpare: &keepsSpare) { problems.append(problem) }
        }
        return problems
    }

    /// Removes one record unless it is live, starting, or not ours; nil when
    /// removed or left on purpose, else why it could not be.
    private static func remove(_ id: String, in base: Int32, shownAs path: String, keepingSpare keepsSpare: inout Bool) -> String? {
        let run = openat(base, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard run >= 0 else { return nil }  // gone already, or not a folder
        defer { close(run) }
        var info = stat()
        guard fstat(run, &info) == 0, info.st_uid == geteuid() else { return nil }
        // Held while removing: a reader sees it as busy, never half-removed and idle.
        guard flock(run, LOCK_EX | LOCK_NB) == 0 else { return nil }
        var summary = stat()
        if fstatat(run, "summary.json", &summary, AT_SYMLINK_NOFOLLOW) != 0, time(nil) - info.st_mtim.tv_sec < startupGrace {
            return nil
        }
        if let problem = removeContents(of: run, shownAs: path, depth: 0) { return problem }
        // The link `markLatest` makes under the run's own name lives for one rename; one left
        // (the run killed between its symlink and its rename) points at nothing now: removed with it.
        unlinkat(base, RunRecord.latestTemporaryPrefix + id, 0)
        // Emptied: the first one kept as the spare, if there is none yet (renamed, never over one).
        if keepsSpare {
            keepsSpare = false
            var spare = stat()
            if fstatat(base, spareName, &spare, AT_SYMLINK_NOFOLLOW) != 0, errno == ENOENT,
               renameat(base, id, base, spareName) == 0 {
                if info.st_mode & 0o7777 != 0o700 { fchmod(run, 0o700) }
                return nil
            }
        }
        guard unlinkat(base, id, AT_REMOVEDIR) == 0 else {
            return "cannot remove \(path): \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// Empties `folder`: files and links unlinked, folders emptied then
    /// removed (each opened with `O_NOFOLLOW`). Names are read first, then
    /// removed, so the listing never changes under `readdir`.
    private static func removeContents(of folder: Int32, shownAs path: String, depth: Int) -> String? {
        guard depth < 64 else { return "cannot remove \(path): folders nested too deep" }
        guard let names = FolderListing.names(in: folder) else {
            return "cannot list \(path): \(String(cString: strerror(errno)))"
        }
        for name in names {
            var info = stat()
            guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                let child = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard child >= 0 else { return "cannot open \(path)/\(name): \(String(cString: strerror(errno)))" }
                let problem = removeContents(of: child, shownAs: path + "/" + name, depth: depth + 1)
                close(child)
                if let problem { return problem }
                guard unlinkat(folder, name, AT_REMOVEDIR) == 0 else {
                    return "cannot remove \(path)/\(name): \(String(cString: strerror(errno)))"
                }
            } else if unlinkat(folder, name, 0) != 0 {
                return "cannot remove \(path)/\(name): \(String(cString: strerror(errno)))"
            }
        }
        return nil
    }
}

extension RunRecord {
    /// `markLatest`'s link under a name of the run's own: this, then the run id.
    static let latestTemporaryPrefix = ".latest-"

    /// Points `latest` in the record's folder at this run: a link made
    /// under a name of this run's own, then renamed over `latest`, so a
    /// reader finds the old run or the new one, never none. Returns why it
    /// could not be (another user's `latest` in a sticky folder cannot be
    /// replaced: readers ignore it, and the user is told), nil when done.
    package func markLatest() -> String? {
        let temporary = Self.latestTemporaryPrefix + runID
        let shown = String(directory.dropLast(runID.utf8.count + 1)) + "/latest"
        if symlinkat(runID, folder.base, temporary) != 0 {
            guard errno == EEXIST, unlinkat(folder.base, temporary, 0) == 0, symlinkat(runID, folder.base, temporary) == 0 else {
                return "cannot point \(shown) at this run: \(String(cString: strerror(errno)))"
            }
        }
        guard renameat(folder.base, temporary, folder.base, "latest") != 0 else { return nil }
        let reason = errno
        unlinkat(folder.base, temporary, 0)
        var info = stat()
        if fstatat(folder.base, "latest", &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_uid != geteuid() {
            return "cannot point \(shown) at this run: it belongs to uid \(info.st_uid), who must remove it; runs, show, logs and resume ignore it and take your newest run"
        }
        return "cannot point \(shown) at this run: \(String(cString: strerror(reason)))"
    }

    /// Removes the records beyond the `keep` newest in this record's folder
    /// (`RecordPruning`); what could not be removed, and why.
    package func pruneOlderRecords(keeping keep: Int) -> [String] {
        let base = String(directory.dropLast(runID.utf8.count + 1))
        return RecordPruning.prune(base: folder.base, shownAs: base, keep: keep, current: runID)
    }
}

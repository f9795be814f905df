/// How one run reads through its snapshot: `IncrementalStore` holds it
/// behind a `Mutex`, from `useSnapshot` to `saveSnapshot`.
struct SnapshotUse {
    /// Reading through the snapshot at all (`useSnapshot` was called).
    var active = false
    /// The `state` folder's stamp before this run read anything, if settled then.
    var startStamp: FileStamp?
    /// The snapshot, when the folder's stamp was still the one it holds.
    var found: MappedStateSnapshot?
    /// State files this run read itself (the snapshot did not hold them).
    var readFiles: [String: [UInt8]?] = [:]

    mutating func read(_ name: String, _ bytes: [UInt8]?) {
        if active { readFiles[name] = bytes }
    }
}

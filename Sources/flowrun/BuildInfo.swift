import CFlowrunSystem

/// What `flowrun --version` prints: the version, and the commit the binary
/// was built from when ./install.sh built it.
enum BuildInfo {
    /// Bumped by hand with each release.
    static let version = "0.1.0"

    /// `1a2b3c4d5e6f` (`-dirty` when built with uncommitted changes), or nil
    /// for a plain `swift build`.
    static var commit: String? {
        let text = String(cString: flowrun_build_commit())
        return text.isEmpty ? nil : text
    }

    /// `0.1.0 (commit 1a2b3c4d5e6f)`, or `0.1.0 (commit unknown: not built by ./install.sh)`.
    static var versionText: String {
        version + " (commit " + (commit ?? "unknown: not built by ./install.sh") + ")"
    }
}

/// One entry of `dotenv:` (SPEC §15): a `KEY=VALUE` file read as a run
/// starts, relative to the workflow file's folder.
public struct DotenvFile: Sendable {
    public var path: Located<String>
    /// `required: false`: a missing file is skipped instead of refused.
    public var required: Bool

    package init(path: Located<String>, required: Bool) {
        self.path = path
        self.required = required
    }
}

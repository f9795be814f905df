@testable import FlowrunModel
import Testing

/// Which task a changed path belongs to under `flowrun watch`, and the folders a glob needs watched.
@Suite struct GlobPatternPathTests {
    @Test(arguments: [
        ("src/**/*.c", "src/a.c", true),
        ("src/**/*.c", "src/new/deeper/b.c", true),
        ("src/**/*.c", "src/.hidden/b.c", false),
        ("src/**/*.c", "src/a.h", false),
        ("src/**/*.c", "other/a.c", false),
        ("src/*.txt", "src/a.txt", true),
        ("src/*.txt", "src/sub/a.txt", false),
        ("site/**", "site/index.html", true),
        ("site/**", "site/css/a.css", true),
        ("site/**", "site", false),
        ("*.yaml", "flowrun.yaml", true),
        ("*.yaml", ".hidden.yaml", false),
    ])
    func aPathMatchesAsTheGlobSays(_ glob: String, _ path: String, _ expected: Bool) throws {
        #expect(try GlobPattern.parse(glob).matches(path: path) == expected)
    }

    @Test func theWatchRootIsTheFixedFolderAndWhetherMatchesLieBelowIt() throws {
        #expect(try GlobPattern.parse("src/**/*.c").watchRoot == ("src", true))
        #expect(try GlobPattern.parse("src/*.txt").watchRoot == ("src", false))
        #expect(try GlobPattern.parse("a/b/c.txt").watchRoot == ("a/b", false))
        #expect(try GlobPattern.parse("*.yaml").watchRoot == ("", false))
        #expect(try GlobPattern.parse("site/**").watchRoot == ("site", true))
        #expect(try GlobPattern.parse("src/*/x.c").watchRoot == ("src", true))
    }
}

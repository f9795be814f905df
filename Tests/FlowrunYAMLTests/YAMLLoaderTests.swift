import FlowrunYAML
import Testing

// MARK: - Marks

@Suite struct YAMLLoaderMarkTests {
    static let text = """
        name: nightly
        tasks:
          build: { run: make }
          lint:
            - "swift format"
            - 'swiftlint'
        """

    @Test func keysAndValuesCarryOneBasedLineAndColumn() throws {
        let root = try document(Self.text)
        let pairs = try #require(root.mapping)
        #expect(root.mark == Mark(line: 1, column: 1))
        #expect(pairs[0].key.mark == Mark(line: 1, column: 1))
        #expect(pairs[0].value.mark == Mark(line: 1, column: 7))
        #expect(pairs[1].key.mark == Mark(line: 2, column: 1))
        #expect(pairs[1].value.mark == Mark(line: 3, column: 3))
    }

    @Test func nestedMarksPointAtTheSource() throws {
        let text = Self.text
        let tasks = try #require(try document(text)["tasks"])
        let build = try #require(tasks.mapping?[0])
        #expect(build.key.mark == mark(of: "build", in: text))
        #expect(build.value.mark == mark(of: "{ run", in: text))
        let run = try #require(build.value.mapping?[0])
        #expect(run.key.mark == mark(of: "run", in: text))
        #expect(run.value.mark == mark(of: "make", in: text))
        let lint = try #require(tasks["lint"]?.sequence)
        #expect(lint.map(\.mark) == [mark(of: "\"swift format\"", in: text), mark(of: "'swiftlint'", in: text)])
        #expect(lint.map(\.scalar?.style) == [.doubleQuoted, .singleQuoted])
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let text = "größe: 1\nname: \"日本\"\nnext: x\n"
        let root = try document(text)
        #expect(root.mapping?[0].value.mark == Mark(line: 1, column: 8))
        #expect(root["name"]?.scalar?.text == "日本")
        #expect(root.mapping?[2].key.mark == Mark(line: 3, column: 1))
    }

    @Test func windowsLineEndingsCountOnce() throws {
        let root = try document("a: 1\r\nb: 2\r\n")
        #expect(root.mapping?.map(\.key.mark) == [Mark(line: 1, column: 1), Mark(line: 2, column: 1)])
    }
}

// MARK: - Anchors and aliases

@Suite struct YAMLLoaderAliasTests {
    @Test func aliasesCopyTheAnchoredNodeAtTheAliasMark() throws {
        let text = """
            base: &base { image: swift, retries: 2 }
            one: *base
            two: &name plain
            three: *name
            """
        let root = try document(text)
        #expect(render(root) == "{base: {image: swift, retries: 2}, one: {image: swift, retries: 2}, two: plain, three: plain}")
        #expect(root["one"]?.mark == mark(of: "*base", in: text))
        #expect(root["three"]?.mark == mark(of: "*name", in: text))
        // The copy's insides keep the marks of the anchored original.
        #expect(root["one"]?.mapping?[0].key.mark == mark(of: "image", in: text))
    }

    @Test func aRedefinedAnchorMeansTheLatestDefinition() throws {
        let root = try document("a: &x 1\nb: *x\nc: &x 2\nd: *x\n")
        #expect(render(root) == "{a: 1, b: 1, c: 2, d: 2}")
    }

    @Test func anUnknownAliasIsRefusedAtItsMark() {
        let result = load("a: *nowhere\n")
        #expect(result.documents.isEmpty)
        #expect(result.problems.map(\.description) == ["1:4: unknown alias '*nowhere' (no anchor '&nowhere' before it)"])
    }

    @Test func anAliasBeforeItsAnchorIsUnknown() {
        let result = load("a: *later\nb: &later 1\n")
        #expect(result.problems.map(\.description) == ["1:4: unknown alias '*later' (no anchor '&later' before it)"])
    }

    @Test(arguments: [
        ("&a [*a]", "1:5"),
        ("&a {x: *a}", "1:8"),
        ("- &a 1\n- &a [x, [*a]]\n", "2:11"),  // redefined while open: the alias means the open one
    ])
    func anAliasInsideItsOwnAnchorIsRefused(text: String, at place: String) {
        let result = load(text)
        #expect(result.documents.isEmpty)
        #expect(result.problems.map(\.description) == [
            "\(place): alias '*a' refers to '&a', a collection that contains it; recursive structures are not supported"
        ])
    }

    @Test func anchorsDoNotReachIntoTheNextDocument() {
        let result = load("a: &x 1\n---\nb: *x\n", multipleDocuments: true)
        #expect(result.problems.map(\.description) == ["3:4: unknown alias '*x' (no anchor '&x' before it)"])
    }

    @Test func aBillionLaughsIsRefusedQuicklyAtTheAliasThatBreaksTheBudget() {
        let text = """
            a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
            b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
            c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
            d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
            e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
            f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
            g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
            h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
            i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
            """
        #expect(text.utf8.count < 1024)
        var result: YAMLLoadResult?
        let elapsed = ContinuousClock().measure { result = load(text) }
        #expect(elapsed < .milliseconds(200))
        #expect(result?.documents.isEmpty == true)
        // a is 10 nodes, b 91, …, f 597,871: a–f expand to 672,588 nodes, so g's first *f passes 1,000,000.
        #expect(result?.problems == [YAMLProblem(
            "aliases expand to more than 1000000 nodes; refusing to expand further (an alias bomb?)",
            at: mark(of: "*f", in: text))])
    }

    @Test func anAliasThatWouldNestPastTheDepthCapIsRefused() {
        var limits = YAMLLimits()
        limits.maxDepth = 5
        let loader = YAMLLoader(limits: limits)
        // The top mapping, b's sequence and *a's three levels: exactly 5.
        #expect(loader.load(bytes: Array("a: &a [[[x]]]\nb: [*a]\n".utf8)).problems.isEmpty)
        let text = "a: &a [[[x]]]\nc: [[*a]]\n"
        #expect(loader.load(bytes: Array(text.utf8)).problems == [
            YAMLProblem("alias '*a' would nest deeper than 5 levels", at: mark(of: "*a", in: text))
        ])
    }

    /// Without the check, each link of a chain of deep anchors adds 99 levels
    /// within the alias budget: 140 links build a tree 14,000 levels deep.
    @Test func aChainOfDeepAnchorsCannotBuildADeepTree() {
        var text = "a0: &a0 " + String(repeating: "[", count: 99) + "x" + String(repeating: "]", count: 99) + "\n"
        for link in 1..<140 {
            text += "a\(link): &a\(link) " + String(repeating: "[", count: 99) + "*a\(link - 1)" + String(repeating: "]", count: 99) + "\n"
        }
        let result = load(text)
        #expect(result.documents.isEmpty)
        #expect(result.problems.map(\.description) == ["2:108: alias '*a0' would nest deeper than 100 levels"])
    }

    @Test func theAliasBudgetCountsNodesNotAliases() {
        var limits = YAMLLimits()
        limits.aliasExpansionBudget = 10
        let loader = YAMLLoader(limits: limits)
        let fits = loader.load(bytes: Array("a: &a [1, 2, 3, 4]\nb: *a\nc: *a\n".utf8))
        #expect(fits.problems.isEmpty)
        let over = loader.load(bytes: Array("a: &a [1, 2, 3, 4]\nb: *a\nc: *a\nd: *a\n".utf8))
        #expect(over.problems.map(\.description) == [
            "4:4: aliases expand to more than 10 nodes; refusing to expand further (an alias bomb?)"
        ])
    }
}

// MARK: - Merge keys

@Suite struct YAMLLoaderMergeTests {
    @Test func oneMergedMapFillsInWhatTheMappingLacks() throws {
        let root = try document("""
            defaults: &defaults { shell: bash, timeout: 5m }
            task:
              run: make
              <<: *defaults
              timeout: 10m
            """)
        #expect(render(try #require(root["task"])) == "{run: make, shell: bash, timeout: 10m}")
    }

    @Test func aListOfMapsMergesInOrderAndEarlierMapsWin() throws {
        let root = try document("""
            a: &a { x: from-a, y: from-a }
            b: &b { y: from-b, z: from-b }
            merged:
              <<: [*a, *b]
              w: own
            """)
        #expect(render(try #require(root["merged"])) == "{x: from-a, y: from-a, z: from-b, w: own}")
    }

    @Test func explicitKeysWinOverEveryMergedMap() throws {
        let root = try document("""
            a: &a { x: 1, y: 1 }
            b: &b { x: 2, z: 2 }
            merged: { x: 0, <<: [*a, *b], z: 0 }
            """)
        #expect(render(try #require(root["merged"])) == "{x: 0, y: 1, z: 0}")
    }

    @Test func mergedKeysDoNotCountAsDuplicates() throws {
        let result = load("base: &base { a: 1 }\nuse:\n  <<: *base\n  a: 2\n")
        #expect(result.problems.isEmpty)
        #expect(result.documents.first.map(render) == "{base: {a: 1}, use: {a: 2}}")
    }

    @Test func aQuotedOrTaggedLessLessIsAnOrdinaryKey() throws {
        let root = try document("base: &base { a: 1 }\nq: { \"<<\": *base }\nt: { !!str <<: *base }\n")
        #expect(render(try #require(root["q"])) == "{\"<<\": {a: 1}}")
        #expect(render(try #require(root["t"])) == "{<<: {a: 1}}")
    }

    @Test func aMergeOfAScalarIsAProblemAtTheValue() {
        let text = "task:\n  <<: 5\n  run: make\n"
        let result = load(text)
        #expect(result.problems == [YAMLProblem(
            "a merge key '<<' takes a mapping or a list of mappings, found a scalar", at: mark(of: "5", in: text))])
        // The rest of the mapping still loads, so the validator can report more.
        #expect(result.documents.first.map(render) == "{task: {run: make}}")
    }

    @Test func aMergeListWithANonMappingIsAProblemAtThatItem() {
        let text = "a: &a { x: 1 }\ntask:\n  <<: [*a, [1, 2]]\n"
        let result = load(text)
        #expect(result.problems.map(\.description) == [
            "3:12: a merge key '<<' takes a mapping or a list of mappings, found a sequence in the list"
        ])
    }

    @Test func aMergeOfNullSaysNull() {
        let result = load("task:\n  <<:\n  run: make\n")
        #expect(result.problems.map(\.description) == [
            "2:6: a merge key '<<' takes a mapping or a list of mappings, found null"
        ])
    }
}

// MARK: - Duplicate keys

@Suite struct YAMLLoaderDuplicateKeyTests {
    @Test func aDuplicateKeyNamesBothPlaces() {
        let result = load("a: 1\na: 2\n")
        #expect(result.problems.map(\.description) == ["2:1: duplicate key 'a' (first defined at 1:1)"])
        // The document still loads, so duplicates are reported with the validator's findings.
        #expect(result.documents.count == 1)
    }

    @Test func quotingDoesNotMakeADifferentKey() {
        let result = load("tasks: { build: 1, 'build': 2 }\n")
        #expect(result.problems.map(\.description) == ["1:20: duplicate key 'build' (first defined at 1:10)"])
    }

    @Test func aFloodOfDuplicatesIsReportedUpToTheCap() {
        var limits = YAMLLimits()
        limits.maxProblems = 3
        let text = String(repeating: "a: 1\n", count: 10_000)
        let result = YAMLLoader(limits: limits).load(bytes: Array(text.utf8))
        #expect(result.documents.count == 1)
        #expect(result.problems.map(\.description) == [
            "2:1: duplicate key 'a' (first defined at 1:1)",
            "3:1: duplicate key 'a' (first defined at 1:1)",
            "4:1: duplicate key 'a' (first defined at 1:1)",
            "5:1: more than 3 problems; the rest are not reported",
        ])
    }

    @Test func problemsComeSortedByPosition() {
        let result = load("""
            a: 1
            a: 2
            b:
              x: 1
              x: 2
            """)
        #expect(result.problems.map(\.description) == [
            "2:1: duplicate key 'a' (first defined at 1:1)",
            "5:3: duplicate key 'x' (first defined at 4:3)",
        ])
    }
}

// MARK: - Documents

@Suite struct YAMLLoaderDocumentTests {
    @Test func aSecondDocumentIsRefusedAtItsStartByDefault() {
        let result = load("a: 1\n---\nb: 2\n")
        #expect(result.documents.isEmpty)
        #expect(result.problems.map(\.description) == ["2:1: a workflow file holds one YAML document; a second one starts here"])
    }

    @Test func aSecondBareDocumentAfterAnEndMarkerIsRefusedToo() {
        let result = load("--- a\n...\n--- b\n")
        #expect(result.problems.map(\.description) == ["3:1: a workflow file holds one YAML document; a second one starts here"])
    }

    @Test func severalDocumentsLoadWhenAllowed() {
        let result = load("a: 1\n---\nb: 2\n--- \n", multipleDocuments: true)
        #expect(result.problems.isEmpty)
        #expect(result.documents.map(render) == ["{a: 1}", "{b: 2}", ""])
    }

    @Test func leadingDocumentMarkersAndEndMarkersAreOneDocument() {
        let result = load("---\na: 1\n...\n")
        #expect(result.problems.isEmpty)
        #expect(result.documents.count == 1)
    }

    /// An empty file has nothing in it, not an empty document: the validator
    /// decides what an empty workflow means.
    @Test(arguments: ["", "\n\n", "# only a comment\n", "   "])
    func anEmptyTextHasNoDocumentsAndNoProblems(text: String) {
        let result = load(text)
        #expect(result.documents.isEmpty)
        #expect(result.problems.isEmpty)
    }

    @Test func anExplicitlyEmptyDocumentIsAnEmptyPlainScalar() throws {
        let result = load("---\n")
        let node = try #require(result.documents.first)
        #expect(node.scalar == YAMLScalar(""))
        #expect(node.scalar?.isNull == true)
        #expect(node.mark.line >= 1 && node.mark.column >= 1)
    }

    @Test func tagsComeExpanded() throws {
        let root = try document("a: !!str 12\nb: !local x\nc: 12\n")
        #expect(root["a"]?.tag == "tag:yaml.org,2002:str")
        #expect(root["b"]?.tag == "!local")
        #expect(root["c"]?.tag == nil)
    }
}

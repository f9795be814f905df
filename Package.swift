// swift-tools-version:6.0
import PackageDescription

/// Swift 6 mode everywhere, plus the upcoming features we rely on.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    // Release builds skip the runtime's exclusivity checks (debug builds,
    // which the unit tests use, keep them): on a long fan-out they were
    // 15 % of the engine's time (docs/BENCHMARKS.md, "A million members").
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
    // Release builds reach a concrete generic type's metadata through an
    // accessor function, not by demangling its name at its first use
    // (`swift_getTypeByMangledName`): that demangling was a tenth of a
    // no-op run's CPU, paid again at every start (docs/BENCHMARKS.md, "The no-op run").
    .unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"], .when(configuration: .release)),
]

let package = Package(
    name: "flowrun",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "flowrun", targets: ["flowrun"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
    ],
    targets: [
        // The system libyaml; only FlowrunYAML imports it.
        .systemLibrary(
            name: "CYaml",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        // libyaml's event stream → nodes with 1-based line:column marks.
        .target(name: "FlowrunYAML", dependencies: ["CYaml"], swiftSettings: strictSettings),
        // The few POSIX calls Swift cannot make or Glibc's overlay hides (a vfork-style
        // spawn, prctl, pidfd, signal handlers, pipe2, memmem) and the supervisor process;
        // each function says why it is in C (include/flowrun_system.h).
        .target(name: "CFlowrunSystem"),
        // libcurl's own header (apt: libcurl4-openssl-dev), for its types and option
        // numbers; libcurl itself is loaded with dlopen at the first http task. No
        // `pkgConfig:` here: SwiftPM would then link -lcurl into flowrun, and every
        // start-up would load libcurl and its TLS libraries (see flowrun_http.c).
        // Debian and Ubuntu install curl/curl.h on the compiler's default path
        // (what `pkg-config --cflags libcurl` names).
        .systemLibrary(name: "CCurl"),
        // http tasks' client: libcurl's multi interface on one thread, over CCurl's header.
        .target(name: "CFlowrunHTTP", dependencies: ["CCurl"]),

        // The stages, one target each; data flows one way (docs/ARCHITECTURE.md):
        // YAML → Loading → Planning → Engine → (events) → Reporting, all over Model and Values.
        // Plain values: the workflow, its tasks, groups, joins and expressions,
        // and the diagnostics that point into the file.
        .target(name: "FlowrunModel", swiftSettings: strictSettings),
        // Values and the text they become, shared by planning, engine and reporters:
        // expression evaluation and templates, JSON, secret masking, safe terminal text.
        .target(name: "FlowrunValues", dependencies: ["FlowrunModel", "CFlowrunSystem"], swiftSettings: strictSettings),
        // YAML nodes → Workflow, or every diagnostic at once.
        .target(name: "FlowrunLoading", dependencies: ["FlowrunYAML", "FlowrunModel", "FlowrunValues"], swiftSettings: strictSettings),
        // Workflow + command-line choices → Plan (and its text and JSON for --dry-run).
        .target(name: "FlowrunPlanning", dependencies: ["FlowrunModel", "FlowrunValues", "CFlowrunSystem"], swiftSettings: strictSettings),
        // What the engine tells reporters: RunEvent, TaskStatus, the reporter protocols,
        // and the console writer whose dropped lines the summary counts.
        .target(name: "FlowrunEvents", dependencies: ["FlowrunModel", "FlowrunValues", "CFlowrunSystem"], swiftSettings: strictSettings),
        // The run folder: its layout and names, events.jsonl, task logs, summary.json.
        // Written by the engine, readable by reporters and commands without the engine.
        .target(name: "FlowrunRecord", dependencies: ["FlowrunModel", "FlowrunValues", "FlowrunEvents", "CFlowrunSystem"], swiftSettings: strictSettings),
        // Plan → processes, requests, sleeps → events and an exit code. No YAML, no loading.
        .target(
            name: "FlowrunEngine",
            dependencies: ["FlowrunModel", "FlowrunValues", "FlowrunPlanning", "FlowrunEvents", "FlowrunRecord", "CFlowrunSystem", "CFlowrunHTTP"],
            swiftSettings: strictSettings),
        // Events → plain lines, JSON lines, the live view; the plan as a graph. Not the engine.
        .target(
            name: "FlowrunReporting",
            dependencies: ["FlowrunModel", "FlowrunValues", "FlowrunPlanning", "FlowrunEvents", "FlowrunRecord"],
            swiftSettings: strictSettings),
        // Plan → an Argo Workflows manifest.
        .target(name: "FlowrunExport", dependencies: ["FlowrunModel", "FlowrunValues", "FlowrunPlanning"], swiftSettings: strictSettings),
        // Argument parsing and wiring only.
        .executableTarget(
            name: "flowrun",
            dependencies: [
                "FlowrunModel", "FlowrunValues", "FlowrunLoading", "FlowrunPlanning", "FlowrunEvents",
                "FlowrunRecord", "FlowrunEngine", "FlowrunReporting", "FlowrunExport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings,
            // Release: a position-dependent executable. A PIE's ~44,000
            // relative relocations were applied at every start, dirtying the
            // pages they touch: without them `flowrun --version` takes 13 %
            // less CPU and 36 % fewer page faults (docs/BENCHMARKS.md,
            // "Start-up"). Libraries, heap and stack are still randomized.
            linkerSettings: [.unsafeFlags(["-Xclang-linker", "-no-pie"], .when(configuration: .release))]
        ),
        // Replays (and, built with the fuzzer, fuzzes) loader + validator on raw bytes.
        .executableTarget(name: "flowrun-fuzz", dependencies: ["FlowrunModel", "FlowrunLoading", "FlowrunPlanning"], path: "Fuzz/flowrun-fuzz", swiftSettings: strictSettings),
        .testTarget(
            name: "FlowrunYAMLTests", dependencies: ["FlowrunYAML"],
            exclude: ["yaml-test-suite-known-differences.txt"], swiftSettings: strictSettings),
        // Helpers the unit test targets share (validate YAML text, parse an expression).
        .target(
            name: "FlowrunTestSupport", dependencies: ["FlowrunModel", "FlowrunLoading"],
            path: "Tests/FlowrunTestSupport", swiftSettings: strictSettings),
        // Unit tests, one target per stage (folders mirror Sources/).
        .testTarget(name: "FlowrunModelTests", dependencies: ["FlowrunModel", "FlowrunLoading", "FlowrunTestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "FlowrunLoadingTests", dependencies: ["FlowrunModel", "FlowrunLoading", "FlowrunPlanning", "FlowrunTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "FlowrunPlanningTests", dependencies: ["FlowrunModel", "FlowrunValues", "FlowrunPlanning", "FlowrunTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "FlowrunValuesTests", dependencies: ["FlowrunModel", "FlowrunValues", "FlowrunTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(name: "FlowrunRecordTests", dependencies: ["FlowrunEvents", "FlowrunRecord"], swiftSettings: strictSettings),
        .testTarget(
            name: "FlowrunEngineTests",
            dependencies: ["FlowrunModel", "FlowrunValues", "FlowrunPlanning", "FlowrunEvents", "FlowrunRecord", "FlowrunEngine", "FlowrunTestSupport", "CFlowrunSystem"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "FlowrunReportingTests",
            dependencies: ["FlowrunModel", "FlowrunValues", "FlowrunPlanning", "FlowrunEvents", "FlowrunReporting"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "FlowrunExportTests", dependencies: ["FlowrunModel", "FlowrunPlanning", "FlowrunExport", "FlowrunTestSupport"],
            swiftSettings: strictSettings),
        // The built binary on real workflow files, processes, signals and terminals.
        .testTarget(name: "FlowrunEndToEndTests", dependencies: ["FlowrunLoading"], swiftSettings: strictSettings),
    ]
)

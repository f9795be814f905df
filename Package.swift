// swift-tools-version:6.0
import PackageDescription

/// Swift 6 mode everywhere, plus the upcoming features we rely on.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "flowrun",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "flowrun", targets: ["flowrun"]),
        .library(name: "FlowrunCore", targets: ["FlowrunCore"]),
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
        // The few POSIX calls Glibc's overlay does not expose (spawn flags, subreaper,
        // signal forwarding, epoll, pidfd, memmem), the supervisor process, and
        // http tasks' client on libcurl, loaded with dlopen.
        .target(name: "CFlowrunSystem"),
        // Model, validation, planning, execution, reporting and export:
        // YAML nodes → Workflow → Plan → run → events, console and record.
        .target(name: "FlowrunCore", dependencies: ["FlowrunYAML", "CFlowrunSystem"], swiftSettings: strictSettings),
        // Argument parsing and wiring only.
        .executableTarget(
            name: "flowrun",
            dependencies: [
                "FlowrunCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        // Replays (and, built with the fuzzer, fuzzes) loader + validator on raw bytes.
        .executableTarget(name: "flowrun-fuzz", dependencies: ["FlowrunCore"], path: "Fuzz/flowrun-fuzz", swiftSettings: strictSettings),
        .testTarget(
            name: "FlowrunYAMLTests", dependencies: ["FlowrunYAML"],
            exclude: ["yaml-test-suite-known-differences.txt"], swiftSettings: strictSettings),
        .testTarget(name: "FlowrunCoreTests", dependencies: ["FlowrunCore"], swiftSettings: strictSettings),
        .testTarget(name: "FlowrunEndToEndTests", dependencies: ["FlowrunCore"], swiftSettings: strictSettings),
    ]
)

import Foundation
import Testing
@testable import FlowrunValues

/// Where flowrun finds its cgroups (SPEC §13), from /proc/self/cgroup and
/// /proc/self/mountinfo as a v1 machine, a v2 machine and a container show them.
@Suite struct CgroupLayoutTests {
    /// A fake /proc/self with the two files.
    static func proc(cgroup: String, mountinfo: String) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("flowrun-cgroup-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try cgroup.write(toFile: folder + "/cgroup", atomically: true, encoding: .utf8)
        try mountinfo.write(toFile: folder + "/mountinfo", atomically: true, encoding: .utf8)
        return folder
    }

    @Test func cgroupV1MemoryAndCPUHierarchies() throws {
        let proc = try Self.proc(
            cgroup: "4:memory:/process_api/48f8\n1:cpu:/\n2:cpuacct:/\n0::/\n",
            mountinfo: """
                30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw
                31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
                32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
                35 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
                40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw

                """)
        defer { try? FileManager.default.removeItem(atPath: proc) }
        let layout = CgroupLayout.read(proc: proc)
        #expect(layout.memory == "/sys/fs/cgroup/memory/process_api/48f8")
        #expect(layout.cpu == "/sys/fs/cgroup/cpu")
        #expect(layout.unified == "/sys/fs/cgroup/unified")
    }

    @Test func cgroupV2UnderASystemdScope() throws {
        let proc = try Self.proc(
            cgroup: "0::/user.slice/user-1000.slice/run-r1.scope\n",
            mountinfo: "28 23 0:25 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n")
        defer { try? FileManager.default.removeItem(atPath: proc) }
        let layout = CgroupLayout.read(proc: proc)
        #expect(layout.unified == "/sys/fs/cgroup/user.slice/user-1000.slice/run-r1.scope")
        #expect(layout.memory == nil && layout.cpu == nil)
    }

    /// In a container the mount's root is the container's own cgroup: the
    /// path in /proc/self/cgroup is relative to it, and `/` is the mount itself.
    @Test func aMountWhoseRootIsNotTheHierarchysRoot() throws {
        let proc = try Self.proc(
            cgroup: "0::/\n",
            mountinfo: "28 23 0:25 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
        defer { try? FileManager.default.removeItem(atPath: proc) }
        #expect(CgroupLayout.read(proc: proc).unified == "/sys/fs/cgroup")
    }

    @Test func nothingMountedGivesNoFolders() throws {
        let proc = try Self.proc(cgroup: "", mountinfo: "30 25 0:26 / /proc rw - proc proc rw\n")
        defer { try? FileManager.default.removeItem(atPath: proc) }
        let layout = CgroupLayout.read(proc: proc)
        #expect(layout.unified == nil && layout.memory == nil && layout.cpu == nil)
    }
}

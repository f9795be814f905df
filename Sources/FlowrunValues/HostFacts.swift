package import FlowrunModel
import CFlowrunSystem
#if canImport(Glibc)
import Glibc
#endif

/// `host.os`, `host.arch` and `host.cpus`: read once, the same for every
/// task of the run, so they are known at planning (`--dry-run` shows them).
///
/// `arch` is the kernel's name (`uname -m`: `x86_64`, `aarch64`), not
/// GitHub's `X64`/`ARM64`: it is the word that release file names, `$(uname -m)`
/// in scripts and Debian multiarch paths use, so it drops into a download URL.
package enum HostFacts {
    package static func value(of fact: HostFact) -> ExpressionValue {
        switch fact {
        case .os: return .string(os)
        case .arch: return .string(arch)
        case .cpus: return .number(Double(cpus))
        }
    }

    package static var os: String {
        #if os(Linux)
        return "linux"
        #elseif os(macOS)
        return "macos"
        #else
        return "unknown"
        #endif
    }

    package static let arch: String = {
        var names = utsname()
        guard uname(&names) == 0 else { return "unknown" }
        return withUnsafeBytes(of: &names.machine) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }()

    /// The affinity mask's count; the online CPUs if it cannot be read.
    package static let cpus: Int = {
        let count = Int(flowrun_affinity_cpu_count())
        return count > 0 ? count : max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }()
}

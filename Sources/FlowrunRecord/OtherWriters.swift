#if canImport(Glibc)
import Glibc
#endif

/// Who besides a file's owner may write it (SPEC §11): the one rule the
/// workflow lookup (`WorkflowTrust`), `resume`, the record's search
/// (`RecordLocation`) and the record's folders (`RecordBase`) all apply, so
/// they cannot drift apart.
///
/// Group-writable is nobody else only for your own user private group, what
/// Debian's and Ubuntu's umask 002 gives: the group named after you, your
/// primary one, with no member but you, and no other account's primary
/// group (a user whose primary group it is writes as that group without
/// being listed in it). Root has no such group: for root, group-writable is
/// the group.
package enum OtherWriters {
    /// "others", "its group", or nil when only the owner may write, for
    /// what `stat` gave (`st_mode`, `st_gid`) as user `me` sees it
    /// (`sticky`: a sticky folder, where no one may replace another's entry).
    package static func of(mode: UInt32, group: UInt32, sticky: Bool, me: UInt32) -> String? {
        guard !sticky else { return nil }
        if mode & 0o002 != 0 { return "others" }
        if mode & 0o020 != 0, !isOwnPrivateGroup(group, of: me) { return "its group" }
        return nil
    }

    /// Whether `gid` is `user`'s own private group (see above).
    package static func isOwnPrivateGroup(_ gid: UInt32, of user: UInt32) -> Bool {
        guard user != 0, let account = account(user), account.gid == gid,
              let group = group(gid), group.name == account.name,
              group.members.allSatisfy({ $0 == account.name }) else { return false }
        return !anotherAccountHasPrimaryGroup(gid, besides: user)
    }

    /// "user 'alice' (uid 1000)", or "uid 1000" when it has no name.
    package static func user(_ uid: UInt32) -> String {
        account(uid).map { "user '\($0.name)' (uid \(uid))" } ?? "uid \(uid)"
    }

    static func account(_ uid: uid_t) -> (name: String, gid: gid_t)? {
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        return buffer.withUnsafeMutableBufferPointer { buffer in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            guard getpwuid_r(uid, &entry, buffer.baseAddress!, buffer.count, &result) == 0, result != nil,
                  let name = entry.pw_name else { return nil }
            return (String(cString: name), entry.pw_gid)
        }
    }

    static func group(_ gid: gid_t) -> (name: String, members: [String])? {
        var buffer = [CChar](repeating: 0, count: 64 * 1024)
        return buffer.withUnsafeMutableBufferPointer { buffer in
            var entry = Glibc.group()
            var result: UnsafeMutablePointer<Glibc.group>?
            guard getgrgid_r(gid, &entry, buffer.baseAddress!, buffer.count, &result) == 0, result != nil,
                  let name = entry.gr_name else { return nil }
            var members: [String] = []
            var member = entry.gr_mem
            while let pointer = member?.pointee {
                members.append(String(cString: pointer))
                member = member?.advanced(by: 1)
            }
            return (String(cString: name), members)
        }
    }

    /// Every passwd entry, as `getent passwd` lists them: one with `gid` as
    /// its primary group and another uid shares the group. An entry too
    /// long to read counts as sharing it: unsure is not private.
    static func anotherAccountHasPrimaryGroup(_ gid: gid_t, besides user: uid_t) -> Bool {
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        return buffer.withUnsafeMutableBufferPointer { buffer in
            setpwent()
            defer { endpwent() }
            while true {
                var entry = passwd()
                var result: UnsafeMutablePointer<passwd>?
                let status = getpwent_r(&entry, buffer.baseAddress!, buffer.count, &result)
                if status == ENOENT || (status == 0 && result == nil) { return false }
                guard status == 0 else { return true }
                if entry.pw_gid == gid && entry.pw_uid != user { return true }
            }
        }
    }
}

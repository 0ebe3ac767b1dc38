import Foundation
import Testing

/// Whether the tests that need privileges beyond root's default in a container must run, and
/// fail where they cannot, rather than skip: `MIRROR_TESTS_NEED_PRIVILEGES=1` (CI sets it, so
/// that a machine that lost a capability does not pass by skipping them).
enum PrivilegedTests {
    static let areRequired = ProcessInfo.processInfo.environment["MIRROR_TESTS_NEED_PRIVILEGES"] == "1"
}

/// Mounts for tests that need a file system of their own: root allowed to mount (not root in a
/// default container, which lacks CAP_SYS_ADMIN). Tests ask ``isPossible`` to skip, saying why.
enum Mount {
    /// Whether a tmpfs can be mounted (and unmounted) here; tried once, on a folder of the
    /// temporary directory. True also where the tests are required to run
    /// (``PrivilegedTests/areRequired``): there a missing capability fails them.
    static let isPossible: Bool = PrivilegedTests.areRequired || {
        guard geteuid() == 0 else { return false }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-mount-probe-\(UUID().uuidString)")
        guard (try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)) != nil else { return false }
        defer { try? FileManager.default.removeItem(at: folder) }
        let mounted = tmpfs(at: folder.path, size: "64k")
        // Whatever `mount` said: it can fail after mounting (its table not written).
        let unmounted = unmount(folder.path)
        return mounted && unmounted
    }()

    static func tmpfs(at path: String, size: String) -> Bool {
        run(["mount", "-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", path]) == 0
    }

    @discardableResult
    static func unmount(_ path: String) -> Bool {
        run(["umount", "-l", path]) == 0
    }

    private static func run(_ arguments: [String]) -> Int32 {
        (try? ChildProcess(executable: "/usr/bin/env", arguments: arguments).runBlocking()) ?? -1
    }
}

/// Files made immutable (`chattr +i`): what root cannot change either, for tests of a file or
/// folder mirror may not touch. Needs CAP_LINUX_IMMUTABLE (not in a default container) and a
/// file system that keeps the flag; tests ask ``isPossible`` to skip, saying why.
enum ImmutableFiles {
    private static let chattr = "/usr/bin/chattr"

    /// Whether `chattr +i` (and `-i`) works on a file of the temporary directory; tried once.
    /// True also where the tests are required to run (``PrivilegedTests/areRequired``).
    static let isPossible: Bool = PrivilegedTests.areRequired || {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: chattr) else { return false }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mirror-immutable-probe-\(UUID().uuidString)").path
        guard FileManager.default.createFile(atPath: file, contents: Data()) else { return false }
        defer { try? FileManager.default.removeItem(atPath: file) }
        guard (try? set(true, file)) != nil else { return false }
        return (try? set(false, file)) != nil
    }()

    /// Makes `path` immutable, or changeable again.
    static func set(_ immutable: Bool, _ path: String) throws {
        let status = try ChildProcess(executable: chattr, arguments: [immutable ? "+i" : "-i", path]).runBlocking()
        guard status == 0 else { throw ChattrFailed(path: path) }
    }

    struct ChattrFailed: Error, CustomStringConvertible {
        var path: String
        var description: String { "chattr could not change \(path)" }
    }
}

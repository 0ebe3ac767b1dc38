import CMirrorSystem

/// The version this build of mirror reports (User-Agent, `--version`): the one place it is set.
package enum MirrorVersion {
    package static let number = "0.1.0"

    /// The git commit the build was made from, when the build was told (`scripts/install`).
    package static let commit: String? = {
        let commit = String(cString: mirror_build_commit())
        return commit.isEmpty ? nil : commit
    }()

    /// `0.1.0`, or `0.1.0 (git 1a2b3c4d5e6f)` for a build from a checkout.
    package static let current = number + (commit.map { " (git \($0))" } ?? "")
}

/// The version this build of mirror reports (User-Agent, `--version`).
package enum MirrorVersion {
    package static let current = "0.1.0"
}

/// The version this build of mirror reports (User-Agent, `--version`).
public enum MirrorVersion {
    public static let current = "0.1.0"
}

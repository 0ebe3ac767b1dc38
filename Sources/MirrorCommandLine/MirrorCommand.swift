import ArgumentParser
import FoundationEssentials
import MirrorKit


struct MirrorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mirror",
        abstract: "Mirror the media of an Imgur tag or a download feed into a directory.",
        discussion: """
            Run by hand or from cron: runs are incremental, one at a time per directory, quiet with \
            --quiet unless something is wrong, and never leave a half-written file under a final name.

            """ + ExitStatus.help,
        version: MirrorVersion.current,
        subcommands: [TagCommand.self, FeedCommand.self, StatusCommand.self, WarcCommand.self],
        defaultSubcommand: TagCommand.self)
}

extension ProgressDisplay: ExpressibleByArgument {}
extension LogFormat: ExpressibleByArgument {}

/// Options every mirroring command takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: "The mirror directory.")
    var out: String

    @Option(help: "A JSON config file (see config.example.json); options given here win over it (default: $XDG_CONFIG_HOME/mirror/config.json or ~/.config/mirror/config.json when it exists, else /etc/mirror/config.json when that does).")
    var config: String?

    @Flag(help: "Read no config file, not even the default one ($XDG_CONFIG_HOME/mirror/config.json, else /etc/mirror/config.json).")
    var noConfig = false

    @Flag(name: .shortAndLong, help: "Print nothing unless something went wrong (no progress display either, unless --progress always).")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Log every request and file.")
    var verbose = false

    @Flag(help: "Read the listing (within the API budget) and print each file a run would fetch, one line each on standard output (JSON lines with --log-format json), writing nothing at all: no file, no state, no cursor.")
    var dryRun = false

    @Option(help: "Stop starting work after this long, e.g. 50m or 1h30m, and exit 0 if nothing failed; the next run carries on. Keep it shorter than the cron interval (default: no limit).")
    var maxDuration: String?

    @Option(help: "Live progress on standard error: auto (when it is a terminal), always, never (default auto).")
    var progress: ProgressDisplay?

    @Option(help: "Standard error's lines: text, or json (one object per line, for log shippers) (default text).")
    var logFormat: LogFormat?

    @Flag(inversion: .prefixedNo, help: "Write a JSON sidecar of what the API or feed said of each file under meta/ (see README); --no-metadata overrides the config (default off).")
    var metadata: Bool?

    @Flag(inversion: .prefixedNo, help: "Leave a mirrored file that was deleted from the mirror deleted; by default each run finds such files (one stat each) and fetches them again. --no-keep-deleted overrides the config.")
    var keepDeleted: Bool?

    @Option(help: ArgumentHelp(
        "Run this program after each saved file, with the file in its environment (MIRROR_PATH, MIRROR_RELATIVE_PATH, MIRROR_URL, MIRROR_ITEM, MIRROR_SOURCE, MIRROR_BYTES); split at spaces, not through a shell. Its standard error is mirror's; a failure is reported at the end (exit 1) (default: none).",
        valueName: "program [argument...]"))
    var exec: String?

    @Option(help: ArgumentHelp("Like --exec, but a shell command, run by /bin/sh -c.", valueName: "command"))
    var execShell: String?

    @Flag(help: "Run no --exec or --exec-shell the config file names.")
    var noExec = false

    @Option(help: ArgumentHelp(
        "Write a Prometheus text file here during and after each run, for node_exporter's textfile collector (default: none).",
        valueName: "file"))
    var metricsFile: String?

    func validate() throws {
        try validateDirectory(out, option: "--out")
        if noConfig, let config { throw ValidationError("--config \(config) and --no-config contradict each other: give one") }
        if [exec != nil, execShell != nil, noExec].filter({ $0 }).count > 1 {
            throw ValidationError("--exec, --exec-shell and --no-exec contradict each other: give one")
        }
        if let exec, case .failure(let error) = CommandHook.make(exec, environment: ProcessInfo.processInfo.environment) {
            throw ValidationError(error.description)
        }
    }

    /// What these options set.
    func apply(to flags: inout MirrorConfiguration) {
        flags.maxDuration = maxDuration
        flags.progress = progress
        flags.logFormat = logFormat
        flags.metadata = metadata
        flags.keepDeleted = keepDeleted
        flags.exec = noExec ? "" : exec
        flags.execShell = execShell
        flags.metricsFile = metricsFile
    }
}

/// How workers on several hosts share one mirror: options of the tag command only (a feed keeps
/// its state in `.mirror`).
struct SharingOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Keep the state in this PostgreSQL database rather than .mirror/state.sqlite3, so that workers on several hosts share one mirror: postgresql://user@host/database (a password from PGPASSWORD).",
        valueName: "url"))
    var state: String?

    @Option(help: "With --state postgresql://…: seconds a worker's claims hold unless renewed; a killed worker's work passes to another after this (default \(RunSettings.Defaults.leaseSeconds)).")
    var leaseSeconds: Int?

    @Option(help: "With --state postgresql://…: connections to one media host that all workers together may have (default \(RunSettings.Defaults.clusterMaxPerHost)).")
    var clusterMaxPerHost: Int?

    @Option(help: ArgumentHelp(
        "With --state postgresql://…: workers that reach the API from one address (behind one NAT) name the same group, and share one API budget, as Imgur counts calls by address (default: this host's name).",
        valueName: "name"))
    var budgetGroup: String?

    func apply(to flags: inout MirrorConfiguration) {
        flags.state = state
        flags.leaseSeconds = leaseSeconds
        flags.clusterMaxPerHost = clusterMaxPerHost
        flags.budgetGroup = budgetGroup
    }
}

/// How files are fetched and named: options the tag and feed commands share.
struct DownloadOptions: ParsableArguments {
    @Option(help: "skip-if-exists (default) asks nothing for a file the mirror has; new-file asks again every run and keeps each new version as name(1).ext. Also spelled skipIfExists, newFile.")
    var mode: DownloadMode?

    @Option(help: "Most download bandwidth for all files together, e.g. 2M or 500k bytes per second (default: no limit).")
    var maxBandwidth: String?

    @Option(help: "Attempts per file, the first included (default \(RunSettings.Defaults.retries)).")
    var retries: Int?

    @Flag(help: "Log in with the login and password of ~/.netrc's entry for each host (its 'machine', else 'default'), as curl --netrc and wget do; a password in a feed's URL wins.")
    var netrc = false

    @Option(help: ArgumentHelp("Like --netrc, but this netrc file.", valueName: "file"))
    var netrcFile: String?

    @Option(help: "Most bytes any file may have, whatever the API or its server claims, e.g. 4G (default \(RunSettings.Defaults.maxFileSize >> 30)G).")
    var maxFileSize: String?

    @Option(help: ArgumentHelp("Archive every HTTP exchange of the run (API calls, feeds, media, redirects) as WARC/1.1 into this directory, as wget --warc-file does: mirror-<time>-<serial>.warc.gz files, no secret in them (see README, Archiving).", valueName: "dir"))
    var warc: String?

    @Option(help: ArgumentHelp("Close a WARC file and begin another past this size (default 1G).", valueName: "size"))
    var warcMaxSize: String?

    func apply(to flags: inout MirrorConfiguration) {
        flags.mode = mode
        flags.warc = warc
        flags.warcMaxSize = warcMaxSize
        flags.maxBandwidth = maxBandwidth
        flags.retries = retries
        flags.netrc = netrcFile ?? (netrc ? RunSettings.defaultNetrc : nil)
        flags.maxFileSize = maxFileSize
    }
}

/// Which found files a run takes: options the tag and feed commands share.
struct FilterOptions: ParsableArguments {
    @Option(name: .customLong("filter"), help: ArgumentHelp(
        "Take only files that meet this condition: type=image, type=animated, size<10M, size>=500k (<, <=, >, >=; k, M, G count in 1024s); give it again for more, all must hold. A size the API or feed does not state passes. A file left out stays found for a run with a wider filter; files already mirrored are kept as ever (default: every file).",
        valueName: "condition"))
    var filters: [String] = []

    @Option(help: ArgumentHelp(
        "Take only posts or feed entries dated at or after this: a day (2026-01-31, UTC), a moment (2026-01-31T12:00:00Z) or a span back from now (30d, 12h). A tag listed newest first (--sort time) is read down to this date, not past it; the cursor is kept for a later run without it (default: any date).",
        valueName: "date"))
    var since: String?

    @Option(help: ArgumentHelp(
        "Take only posts or feed entries dated before this, written as for --since (default: any date).", valueName: "date"))
    var until: String?

    func apply(to flags: inout MirrorConfiguration) {
        flags.filter = filters.isEmpty ? nil : filters
        flags.since = since
        flags.until = until
    }
}

/// Refuses an empty or blank directory (cron's `--out "$DIR"` with `DIR` unset): it would be the
/// current directory.
func validateDirectory(_ path: String, option: String) throws {
    guard !path.trimming(.spacesAndNewlines).isEmpty else {
        throw ValidationError("\(option) is empty; name the mirror directory (is a variable in it unset?)")
    }
}

/// Checks the flags `flags` sets, as a usage error (exit 64) naming the flag.
func validateFlags(_ flags: MirrorConfiguration) throws {
    do {
        try flags.validate(origin: .flags)
    } catch {
        throw ValidationError(error.description)
    }
}

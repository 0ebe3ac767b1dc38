import ArgumentParser
import FoundationEssentials
import MirrorKit

/// Exit statuses, from sysexits.h where one fits, so cron wrappers can tell failures apart.
enum ExitStatus {
    static let someFilesFailed: Int32 = 1
    static let dataError: Int32 = 65
    static let noInput: Int32 = 66
    static let unavailable: Int32 = 69
    static let cannotCreate: Int32 = 73
    static let tryLater: Int32 = 75
    static let configuration: Int32 = 78

    static func of(_ error: MirrorError) -> Int32 {
        switch error {
        case .configuration, .clientIDFile: configuration
        case .noMirrorState: noInput
        case .unsafePath, .fileSystem, .stateDatabase: cannotCreate
        case .digest: unavailable
        case .locked, .claimTaken: tryLater
        }
    }
}

extension ExitStatus {
    /// Every status a command can end with, for its help.
    static let help = """
        Exit status: 0 everything mirrored (or a big tag stopped at the --max-duration deadline \
        with nothing lost: the next run carries on); 1 some files failed \
        (even when the run also stopped for the budget); 64 bad usage: an unknown option, a \
        string that is no source, an empty --out; 65 the API or feed sent data of the wrong \
        shape; 66 an input file, or the mirror status is asked of, cannot be read; 69 the API or feed could not be reached or \
        refused, the API knows no such tag, or a shared state needs mirror-postgresql and it is not installed; 73 the output directory or state cannot be written; 75 try later: another run \
        holds the directory, the API budget is spent, or a media host is down or throttling \
        (the next run carries on where this one stopped); 78 configuration or client id \
        problem; 128+N stopped by signal N (130 for Ctrl-C, 143 for SIGTERM), partial \
        downloads kept. Several sources end with the worst of their statuses.
        """

    /// The status of a run of several sources, from theirs: a signal first, then what cannot be
    /// mended by waiting (the mirror, the config, bad data, a refusal), then failed files, then
    /// "try later", then success.
    static func worst(_ statuses: [Int32]) -> Int32 {
        func severity(_ status: Int32) -> Int {
            switch status {
            case 0: 0
            case tryLater: 1
            case someFilesFailed: 2
            case unavailable: 3
            case dataError: 4
            case noInput: 5
            case configuration: 6
            case cannotCreate: 7
            default: 8
            }
        }
        return statuses.max { severity($0) < severity($1) } ?? 0
    }

    /// Prints `message` as one line on standard error and returns the exit to throw.
    static func fail(_ message: String, status: Int32) -> ExitCode {
        Console.printError("mirror: \(message)")
        return ExitCode(status)
    }
}

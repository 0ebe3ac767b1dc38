import Testing
@testable import MirrorKit

@Suite("Download states and their transitions")
struct DownloadStateTests {
    /// Every allowed move, written out: the table in DownloadState must match it exactly.
    static let allowed: Set<String> = [
        "ready→waiting", "ready→downloading",
        "waiting→downloading", "waiting→suspended", "waiting→completed", "waiting→failed",
        "downloading→paused", "downloading→waiting", "downloading→suspended", "downloading→completed",
        "downloading→failed",
        "paused→downloading", "paused→waiting", "paused→suspended", "paused→completed", "paused→failed",
        "suspended→waiting", "suspended→downloading", "suspended→cancelled",
    ]

    @Test(arguments: DownloadState.allCases)
    func onlyTheListedTransitionsAreAllowed(_ from: DownloadState) {
        for to in DownloadState.allCases {
            #expect(from.canTransition(to: to) == Self.allowed.contains("\(from.rawValue)→\(to.rawValue)"), "\(from) → \(to)")
        }
    }

    @Test func terminalStatesHaveNoWayOut() {
        for state in DownloadState.allCases where state.isTerminal {
            #expect(DownloadState.allCases.allSatisfy { !state.canTransition(to: $0) })
        }
    }

    @Test func anIllegalTransitionIsAProgrammingErrorThatStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            DownloadState.checkTransition(from: .completed, to: .downloading, url: "http://x/y")
        }
    }
}

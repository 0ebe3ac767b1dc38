import Testing
@testable import MirrorKit

/// The engine thread is woken once per batch of commands it takes, not once per command: each
/// wakeup is a system call on the poster's side and a turn of the engine's loop on the other.
@Suite("Engine mailbox wakeups")
struct EngineMailboxTests {
    @Test func commandsPostedBeforeTheEngineTakesThemShareOneWakeup() {
        let mailbox = EngineMailbox()
        defer { _ = mailbox.close() }
        let ids = (0..<3).map { _ in TransferID.next() }
        for id in ids { mailbox.post(.pause(id)) }
        #expect(mailbox.wakeupsSent == 1)

        let taken = mailbox.takeAll()
        #expect(taken.count == 3)
        #expect(mailbox.takeAll().isEmpty)

        // The inbox emptied: the next command needs a wakeup of its own, or it would wait for
        // the poll's timeout.
        mailbox.post(.resume(ids[0]))
        #expect(mailbox.wakeupsSent == 2)
        mailbox.post(.resume(ids[1]))
        #expect(mailbox.wakeupsSent == 2)
    }

    @Test func aClosedMailboxSendsNoWakeup() {
        let mailbox = EngineMailbox()
        _ = mailbox.close()
        mailbox.post(.pause(.next()))
        #expect(mailbox.wakeupsSent == 0)
    }
}

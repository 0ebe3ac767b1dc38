/// Judges a successful response's body from its first bytes, so a transfer can end as soon as
/// they show the body is unwanted rather than once all of it is in.
///
/// Each transfer works on its own copy, fed every body byte in order on the engine thread until it
/// decides. A refusal ends the transfer with ``TransferError/Reason/refused(_:)``.
protocol BodyInspector: Sendable {
    /// Takes the next bytes of the body.
    mutating func inspect(_ bytes: UnsafeRawBufferPointer) -> BodyInspection
}

/// What a ``BodyInspector`` made of the body so far.
enum BodyInspection: Sendable, Equatable {
    /// More bytes are needed; the inspector wants them.
    case undecided
    /// The body is fine as far as the inspector cares: it sees no more of it.
    case accepted
    /// The body is unwanted, for this reason.
    case refused(String)
}

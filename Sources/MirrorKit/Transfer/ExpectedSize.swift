/// What is known of a file's size before it is fetched, and how far it is to be trusted.
package struct ExpectedSize: Sendable, Equatable, ExpressibleByIntegerLiteral {
    /// Stated by the API: the file must have this size, and a body longer is refused as it comes.
    package var exact: Int64?
    /// Declared by a feed (an enclosure's `length`, often stale): the size the body must have
    /// only when the server states none, since a body the server does not delimit by a length
    /// may otherwise end short and look whole.
    package var declared: Int64?

    package init(exact: Int64? = nil, declared: Int64? = nil) {
        self.exact = exact
        self.declared = declared
    }

    package init(integerLiteral value: Int64) {
        self.init(exact: value)
    }

    /// The size to show as a download's total before the server says.
    package var shown: Int64? { exact ?? declared }
}
